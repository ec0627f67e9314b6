"""The program as a launcher module (a ``numba.njit`` function) and its kernels as units.

``write_program`` takes a jaxpr whose eqns are ``kernel`` eqns (from fusion), plain
primitives (each then a kernel of the kind fusion gives it), calls or control flow with such
bodies, and returns the launcher module's source: imports, typed constants, the Numba
signature, and the function, named after the user's function, whose arguments are the
addresses of the kernels it calls (when it calls any), the program's constants and inputs
and which returns the tuple of outputs. An elementwise or reduction kernel, a small
product (``units.write_product``, into an array the launcher allocates) and its epilogue,
is written as a function of its own with local names (``units.write_unit``), one module
per distinct kernel, which the launcher calls by address; the other kernels (large or
integer products, scalar-only kernels, opaque ops) are loop nests and calls inline in
the launcher. Every statement carries a comment naming the equation
it came from; the module docstring holds the program itself.

Intermediates live in the buffers of the memory plan (``passes.plan_memory``): a buffer
is a flat array allocated where it is first needed and viewed with each value's shape.
A value of one element is no array but a scalar local (``scalar_values``): a rank-0
kernel output, loop carry or ``cond`` result costs no allocation.

This module holds the writer's context (names, constants, arrays, allocation from the
plan) and the walk over the eqns; the writer of each kind of kernel is in
``kind_writers.py``, the module's text (imports, reserved names, the assembly) in
``launcher_module.py``, both mixed into ``_ProgramWriter``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ...ir import dtypes
from ...ir.core import Eqn, Jaxpr, Literal, Var
from ...ir.printer import var_name
from ...passes.kernels import as_kernel, split_into_ops
from ...passes.memory import Liveness, makes_view
from .. import source as escape
from . import control, heap, intrinsics, parts, scalar, scalar_values, steps
from .kernels import Kernel
from .kind_writers import _VIEWS, KindWriters
from .launcher_module import _RESERVED, IMPORTS, ModuleWriter, _param, _shown, function_name
from .loopnest import tuple_source
from .scalar import dtype_source
from .unfusable import Unfusable

# A run of an odd number of underscores: no name Numba makes for a variable has one.
_ODD_UNDERSCORES = re.compile(r"(?<!_)_(__)*(?!_)")
# Outputs this large are written into arrays the executable keeps (``pooled_outputs``):
# glibc maps a new block for every allocation from 32 MiB (``heap``).
POOLED_FROM_BYTES = heap.MMAP_THRESHOLD_BYTES
# The launcher's argument holding its kernels' addresses (``units``).
ADDRESSES = "kernel_addresses"


@dataclass
class GeneratedProgram:
    function_name: str
    # Writes the launcher's module (``launcher``) when first asked: its docstring prints
    # the program (35 ms of an 8-layer transformer step), and a program of steps is never
    # compiled, only shown.
    write_launcher: Callable[[], str]
    shown: str  # what ``source`` shows after the launcher: the steps, the kernels' modules
    parallel: bool
    kernels: list[Kernel] = field(default_factory=list)
    # The loop kernels as units of compilation (``units``), called by address from the
    # program function, which then takes their addresses as its first argument.
    units: list = field(default_factory=list)
    parts: int = 0  # njit functions the program function calls (``parts.functions``)
    # The outputs (indices into the jaxpr's outvars) written into arrays the caller passes
    # after the program's arguments, in order (``pooled_outputs``).
    pooled: list[int] = field(default_factory=list)
    calls_blas: bool = False  # BLAS or LAPACK: run on one thread in the call (``threads``)
    steps: bool = False  # the launcher runs steps (``steps.py``): the machine's address last
    # The program function's code: the launcher's, or the launcher the steps stand for.
    code: str = ""
    steps_plan: object = None  # a program of steps: what its launcher does (steps.Plan)
    # Kernels the writer split into their eqns, by reason (``unfusable.WriterRefusal``).
    refusals: Counter = field(default_factory=Counter)
    # The pass log of the program, the writer's refusals on it (the backend's ``lower``).
    pass_log: object = None
    # The program's liveness (``passes.memory.Liveness``), the memory plan's where one
    # was given: what its results may share (``executable``).
    liveness: Liveness | None = None

    @functools.cached_property
    def launcher(self) -> str:
        """The module to compile: the launcher."""
        return self.write_launcher()

    @functools.cached_property
    def source(self) -> str:
        """The launcher's module with what it runs: its kernels' modules (``shown``)."""
        return self.launcher + self.shown


def write_program(jaxpr: Jaxpr, name: str, parallel_work: int, plan=None, on_unit=None):
    """The module source for ``jaxpr`` (constvars first, then invars, as arguments).

    Kernels with at least ``parallel_work`` (see ``work``) use prange. ``plan`` is a
    ``passes.MemoryPlan`` of ``jaxpr`` (None: every value its own array), whose proof
    (``MemoryPlan.liveness``) the program is written by. ``on_unit(unit)`` is called as
    each distinct kernel unit is first written (``units.EarlyStart``).
    """
    return _ProgramWriter(jaxpr, name, parallel_work, plan, on_unit).write()


class _ProgramWriter(KindWriters, ModuleWriter):
    """Names, constants, imports and the function body; kernels are written into it."""

    def __init__(self, jaxpr: Jaxpr, name: str, parallel_work: int, plan, on_unit=None):
        self.jaxpr = jaxpr
        self.name_text = name
        self.parallel_work = parallel_work
        self.names: dict[Var, str] = {}
        self.letters = 0  # variable names handed out: a, b, ..., z, ba, ...
        self.counts: dict[str, int] = defaultdict(int)
        self.constants: dict[tuple, str] = {}
        self.modules: set[str] = set()
        self.lines: list[str] = []
        self.indent = ""
        self.parallel = False
        self.calls_blas = False  # set by the writers of products and linear algebra
        self.kernels: list[Kernel] = []
        self.functions: list[list[str]] = []  # module-level helpers, before the program
        self.buffer_of = _safe_buffers(jaxpr, plan)
        # Which updates write in place, and where: the plan's proof, made once.
        self.liveness = plan.liveness if plan is not None else Liveness(jaxpr)
        self.buffers: dict[int, str] = {}  # buffer index -> its flat array, once allocated
        # The name of a value held in a view of a buffer -> the buffer's flat array: a
        # kernel's flat view of the value is the buffer itself, with no view to compile.
        self.flat_buffer: dict[str, str] = {}
        # The eqn being written, as (its jaxpr's liveness, its index): what the proof
        # that a kernel may write an output over a value of its own is asked about.
        self.place: tuple[Liveness, int] | None = None
        # Update values their loop kernel stored straight into the update's window.
        self.windows_written: set[Var] = set()
        # Values of one element held as arrays, not scalars (``scalar_values``): the
        # arguments, and the arrays made for an op that reads or writes arrays.
        self.arrays: set[Var] = set(jaxpr.constvars + jaxpr.invars)
        # The names of values and buffers the code written since ``parts`` last emptied
        # it mentions: what the lines of one top-level eqn may read of those before.
        self.mentioned: set[str] = set()
        # Outputs the executable may pass an array for (``pooled_outputs``) -> the name of
        # that argument; those the program writes so, in order.
        self.poolable = {v: self.fresh("pooled") for v in pooled_outputs(jaxpr, self.buffer_of)}
        self.pooled: list[Var] = []
        # The distinct kernels written as units (``units.Unit``) and their index by key.
        self.units: list = []
        self.on_unit = on_unit  # called with each distinct unit as it is first written
        self.unit_index: dict[str, int] = {}
        self.steps = steps.Recorder()  # what each top-level line does, for ``steps``
        self.refusals: Counter = Counter()  # kernels split, by ``WriterRefusal``

    # --- the context kernels write with ------------------------------------------------------

    def name(self, var: Var) -> str:
        if var not in self.names:
            name = var_name(self.letters)
            self.letters += 1
            self.names[var] = name + "_" if name in _RESERVED else name
        self.mentioned.add(self.names[var])
        return self.names[var]

    def fresh(self, prefix: str) -> str:
        """A new local name: ``prefix``, a separator and a count.

        Numba renames the second assignment of a variable ``x`` to ``x.1`` (never
        ``x.0``), and its parallel lowering spells that ``x_1``, each underscore of ``x``
        doubled; a local already named ``x_1`` breaks the lowering (``key already in
        dictionary``). Such a spelling is a name whose underscores all come in even runs,
        then ``_`` and a count from 1. So after the first name (``x_0``), a prefix with
        no odd run of underscores (a value's name, a loop letter) takes two before its
        count: ``x__1`` is no renamed variable's spelling, nor are ``carry_0_1`` and
        ``in__1`` (prefixes ``carry_0`` and ``in_``, a reserved name's value)."""
        count = self.counts[prefix]
        self.counts[prefix] += 1
        separator = "_" if count == 0 or _ODD_UNDERSCORES.search(prefix) else "__"
        return f"{prefix}{separator}{count}"

    def constant(self, value, dtype) -> str:
        dtype = np.dtype(dtype)
        source = scalar.literal_source(value, dtype)
        if dtype == dtypes.bool_:
            return source
        if (dtype, source) not in self.constants:
            self.constants[(dtype, source)] = f"_k{len(self.constants)}"
        return self.constants[(dtype, source)]

    def function(self, module: str, attribute: str) -> str:
        self.modules.add(module)
        return f"{IMPORTS[module][0]}.{attribute}"

    def atom(self, atom) -> str:
        if isinstance(atom, Literal):
            return self.constant(atom.val, atom.aval.dtype)
        return self.name(atom)

    def is_scalar(self, atom) -> bool:
        """Whether ``atom`` is a scalar in the generated code (``scalar_values``): a literal,
        or a value of one element the program computes, unless a loop kernel stored it
        straight into an update's window."""
        if isinstance(atom, Literal):
            return True
        return atom.aval.size == 1 and atom not in self.arrays and atom not in self.windows_written

    def scalar_of(self, atom) -> str:
        """``atom``'s one element as an expression: a constant, a local, or ``a[()]``."""
        if isinstance(atom, Literal):
            return self.constant(atom.val, atom.aval.dtype)
        if self.is_scalar(atom):
            return self.name(atom)
        return f"{self.name(atom)}[{scalar_values.element_index(atom.aval)}]"

    def scalar_local(self, atom) -> str:
        """``atom``'s one element as a constant or a local name (a body input is bound to a
        name, never to an expression): an array's element is loaded into a new local."""
        if self.is_scalar(atom):
            return self.scalar_of(atom)
        name = self.fresh(f"{self.name(atom)}_element")
        self.emit(f"{name} = {self.scalar_of(atom)}")
        return name

    def array_of(self, atom) -> str:
        """An array holding ``atom``: its name, or a new array for a scalar (materialized
        here, for what reads arrays: a program output, a callback)."""
        if isinstance(atom, Var) and not self.is_scalar(atom):
            return self.name(atom)
        name = self.fresh(f"{self.name(atom)}_array" if isinstance(atom, Var) else "literal")
        self.emit(*scalar_values.materialize(name, self.scalar_of(atom), atom.aval))
        return name

    def constant_array(self, atom) -> str:
        """An array holding ``atom``, for an op that reads every operand as an array (an
        opaque op, a contraction): its name, or for a literal a 0-d array constant of the
        module, which costs nothing at run time (compiled code holds it read-only)."""
        if isinstance(atom, Var):
            return self.name(atom)
        dtype = atom.aval.dtype
        value = scalar.literal_source(atom.val, dtype)
        source = f"np.full((), {value}, {dtype_source(dtype)})"
        if (dtype, source) not in self.constants:
            self.constants[(dtype, source)] = f"_k{len(self.constants)}"
        return self.constants[(dtype, source)]

    def new_array(self, name: str, shape, dtype) -> list[str]:
        """Lines binding ``name`` to a new uninitialised array (huge pages when large)."""
        lines = [f"{name} = np.empty({tuple_source(shape)}, {dtype_source(dtype)})"]
        if math.prod(shape) * np.dtype(dtype).itemsize >= intrinsics.HUGE_PAGES_FROM_BYTES:
            lines.append(f"{self.function(scalar.INTRINSICS, 'advise_huge_pages')}({name})")
        return lines

    def emit(self, *lines: str) -> None:
        self.lines += [self.indent + line if line else "" for line in lines]

    comments_show_lines = True  # the user's line that made each eqn

    def comment(self, eqn: Eqn) -> str:
        outputs = " ".join(self.name(v) for v in eqn.outputs)
        params = " ".join(f"{k}={_param(v)}" for k, v in eqn.params.items() if _shown(v))
        inputs = " ".join(
            f"{a.val.item()!r}:{a.aval.str_short()}" if isinstance(a, Literal) else self.name(a)
            for a in eqn.inputs
        )
        text = f"{outputs} = {eqn.prim.name}{f'[{params}]' if params else ''} {inputs}".rstrip()
        line = eqn.source_info if self.comments_show_lines else None
        return escape.comment(text + (f"  ({line})" if line else ""))

    def allocate(self, var: Var) -> str:
        """Bind ``var``'s name to an array of its type: a view of its planned buffer. A
        value of one element allocated so is held as an array from here on."""
        name, aval = self.name(var), var.aval
        if aval.size == 1:
            self.arrays.add(var)
        if var in self.poolable and not self.indent and var not in self.pooled:
            # Once, at the top level: the executable's array, of the output's type.
            self.pooled.append(var)
            pooled = self.poolable[var]
            self.steps.alias(self, name, pooled, f"{name} = {pooled}  # the executable's array")
            self.mentioned.add(pooled)
            return name
        nbytes = aval.size * scalar.storage_dtype(aval.dtype).itemsize
        buffer = self.buffer_of.get(var)
        if buffer is None:
            self.steps.array(self, name, self.new_array(name, aval.shape, aval.dtype), nbytes)
            return name
        if buffer not in self.buffers:
            self.buffers[buffer] = f"buffer_{buffer}"
            lines = self.new_array(f"buffer_{buffer}", (aval.size,), aval.dtype)
            self.steps.array(self, f"buffer_{buffer}", lines, nbytes)
        flat = self.buffers[buffer]
        self.mentioned.add(flat)
        if len(aval.shape) == 1:  # the buffer itself
            self.steps.alias(self, name, flat)
        else:
            self.steps.alias(self, name, flat, f"{name} = {self.view(flat, aval.shape)}")
            self.flat_buffer[name] = flat
        return name

    def view(self, array: str, shape) -> str:
        """``array`` (C-contiguous, of ``shape``'s size) viewed with ``shape``, in a form
        LLVM sees through (``intrinsics.shaped_view``), so the loops over it vectorise."""
        if not shape:  # Numba cannot reshape to rank 0
            return f"{array}.reshape(())"
        if len(shape) == 1 and array in self.flat_buffer:
            self.mentioned.add(self.flat_buffer[array])
            return self.flat_buffer[array]
        return f"{self.function(scalar.INTRINSICS, 'shaped_view')}({array}, {tuple_source(shape)})"

    def opaque(self, value: int) -> str:
        """``value`` in a form LLVM cannot fold to a constant (``intrinsics.opaque_int``)."""
        return f"{self.function(scalar.INTRINSICS, 'opaque_int')}({value})"

    def updated_in_place(self, var: Var, operand: Var, name: str) -> str:
        """The line binding ``var``'s name to the array ``name`` of ``operand`` (an update
        the memory plan lets write in place)."""
        return f"{self.name(var)} = {name}  # in place: the operand dies here"

    def updated_copy(self, var: Var, operand: str) -> str:
        """The line binding ``var``'s name to a copy of ``operand`` (an update's target)."""
        return f"{self.name(var)} = {operand}.copy()"

    def aliases(self, values, name: str) -> None:
        """Bind each of ``values`` to the array ``name`` (a step, ``steps``)."""
        for var in values:
            self.steps.alias(self, self.name(var), name)

    def module_function(self, lines: list[str]) -> None:
        """Define a function at module level, ahead of the program (``callbacks``)."""
        self.functions.append(lines)

    def scratch(self, shape, dtype) -> str:
        name = self.fresh("scratch")
        self.emit(*self.new_array(name, shape, dtype))
        return name

    # --- the program ---------------------------------------------------------------------------

    def write(self) -> GeneratedProgram:
        jaxpr = self.jaxpr
        arguments = [self.name(v) for v in jaxpr.constvars + jaxpr.invars]
        for eqn in jaxpr.eqns:  # the printer's order: the docstring's names are the code's
            for var in eqn.outputs:
                self.name(var)
        spans = parts.write_spans(self, jaxpr, self.liveness)
        fn = function_name(self.name_text)
        arguments += [self.poolable[v] for v in self.pooled]
        stepped = steps.write_launcher(self, list(arguments), spans[-1].start)
        if self.units:
            arguments.insert(0, ADDRESSES)
        if stepped is None:
            functions = parts.functions(self, fn, arguments, spans)
            code = self._module(functions)  # compiled at once
            write_launcher = functools.partial(str, code)
        else:
            lines, codes, steps_plan = stepped
            self.constants[(None, codes)] = "STEPS"
            held = [*jaxpr.constvars, *jaxpr.invars, *self.pooled]
            dtypes = tuple(scalar.storage_dtype(v.aval.dtype) for v in held)
            steps_plan = dataclasses.replace(steps_plan, dtypes=dtypes)
            functions = [parts.Function(fn, arguments, lines, False)]
            write_launcher = functools.partial(self._module, functions)
        pooled = [jaxpr.outvars.index(v) for v in self.pooled]
        shown = "".join(
            f"\n\n# --- kernel {unit.name} (module {unit.module_name}) ---\n{unit.source}"
            for unit in self.units
        )
        if stepped is not None:  # what the steps do, as the launcher they stand for
            code = f"def {fn}({', '.join(arguments)}):\n" + "".join(
                f"    {line}\n" if line else "\n" for line in self.lines[: spans[-1].start]
            )
            heading = f"# --- the steps of {fn}, as the launcher they stand for (steps.py) ---"
            shown = f"\n\n{heading}\n{code}{shown}"
        return GeneratedProgram(
            fn,
            write_launcher,
            shown,
            self.parallel or any(unit.parallel for unit in self.units),
            self.kernels,
            units=self.units,
            parts=len(functions) - 1,
            pooled=pooled,
            calls_blas=self.calls_blas,
            steps=stepped is not None,
            steps_plan=None if stepped is None else steps_plan,
            code=code,
            refusals=self.refusals,
            liveness=self.liveness,
        )

    def write_results(self) -> None:
        """The program's return statement, each output an array."""
        results = [self.array_of(atom) for atom in self.jaxpr.outvars]
        self.emit(f"return {tuple_source(results)}")

    def write_eqns(self, jaxpr: Jaxpr, liveness: Liveness | None = None) -> None:
        """Write ``jaxpr``'s eqns; ``liveness`` (a loop body's, with the carries the loop
        owns) decides which updates write in place, by default those of ``jaxpr`` alone."""
        liveness = liveness or Liveness(jaxpr)
        for index, eqn in enumerate(jaxpr.eqns):
            self.write_eqn(liveness, index, eqn)

    def write_eqn(self, liveness: Liveness, index: int, eqn: Eqn) -> None:
        """Write ``eqn``, the ``index``-th of the jaxpr that ``liveness`` describes."""
        self.place = (liveness, index)
        writer = control.WRITERS.get(eqn.prim.name)
        if writer is not None:
            writer(self, eqn)
        else:
            self._kernel(as_kernel(eqn))

    def in_place(self, output: Var) -> bool:
        """Whether the update writing ``output`` writes into its operand's memory (the
        memory plan's proof: the operand dies there and is not the caller's)."""
        liveness, _ = self.place
        return output in liveness.in_place

    def _kernel(self, eqn: Eqn) -> None:
        """Write the ``kernel`` eqn ``eqn``; where its writer refuses its body
        (``Unfusable``), its ops one kernel each (``passes.kernels.split_into_ops``)."""
        kernel = Kernel.of(eqn)
        start = len(self.lines)
        was_parallel, buffers, stored = self.parallel, dict(self.buffers), set(self.windows_written)
        arrays, pooled = set(self.arrays), list(self.pooled)
        unit_count = len(self.units)
        self._name_body(kernel)
        kind = kernel.kind
        outputs = ", ".join(f"{self.name(v)}:{v.aval.str_short()}" for v in kernel.outputs)
        heading = f"kernel {len(self.kernels)}: {kind} {kernel.name} -> {outputs}"
        lines = dict.fromkeys(str(e.source_info) for e in kernel.jaxpr.eqns if e.source_info)
        if lines:  # a unit's own text names no source line: its call does
            heading += f"  ({', '.join(lines)})"
        self.emit(f"# {escape.comment(heading)}")
        try:
            # A module-level import would be circular: units builds on this writer.
            from .units import write_unit

            if not write_unit(self, kernel, kind):
                self.write_kind(kernel)
        except Unfusable as reason:
            if len(kernel.jaxpr.eqns) <= 1:
                raise NotImplementedError(
                    f"the cpu backend cannot compile {kernel.name}: {reason}"
                ) from reason
            self.refusals[reason.reason] += 1
            del self.lines[start:]
            self.parallel, self.buffers, self.windows_written = was_parallel, buffers, stored
            self.arrays, self.pooled = arrays, pooled
            for unit in self.units[unit_count:]:
                del self.unit_index[unit.key]
            del self.units[unit_count:]
            for part in split_into_ops(eqn):
                self._kernel(part)
            return
        self.kernels.append(kernel)

    def _name_body(self, kernel: Kernel) -> None:
        """Body inputs and outputs take the names of the program's values they stand for."""
        body = kernel.jaxpr
        for inner, atom in zip(body.invars, kernel.inputs, strict=True):
            if isinstance(atom, Var):  # always: a body written twice reads new inputs
                self.names[inner] = self.name(atom)
        for inner, top in zip(body.outvars, kernel.outputs, strict=True):
            if isinstance(inner, Var) and inner not in self.names:
                self.names[inner] = self.name(top)
        for eqn in body.eqns:
            for var in eqn.outputs:
                self.name(var)


def pooled_outputs(jaxpr: Jaxpr, buffer_of: dict[Var, int]) -> list[Var]:
    """The outputs the executable may hand the program an array for: those of at least
    ``POOLED_FROM_BYTES``, made by the program (no argument, constant or planned buffer)
    and returned once. An array that large is mapped afresh by every ``np.empty`` and
    its pages zeroed by the kernel as they are first written (a 64 MiB output: 10-18 ms,
    where the loop filling it takes 6 ms); the executable reuses the array it returned
    before once nothing else holds it (``executable.OutputPool``)."""
    made = set(jaxpr.constvars + jaxpr.invars) | set(buffer_of)
    counts = Counter(v for v in jaxpr.outvars if isinstance(v, Var))
    return [
        v
        for v, count in counts.items()
        if count == 1 and v not in made and v.aval.nbytes >= POOLED_FROM_BYTES
    ]


def _safe_buffers(jaxpr: Jaxpr, plan) -> dict[Var, int]:
    """The plan's buffers, for the values no view or control-flow result can alias."""
    if plan is None:
        return {}
    aliased = set()
    for eqn in jaxpr.eqns:
        body = eqn.params["jaxpr"].eqns if eqn.prim.name == "kernel" else ()
        prims = {e.prim.name for e in body}
        # A slice of whole rows is a view too (``makes_view``).
        viewing = prims & set(_VIEWS) or any(map(makes_view, (eqn, *body)))
        if eqn.prim.name in control.WRITERS or eqn.prim.name in _VIEWS or viewing:
            aliased.update(a for a in eqn.inputs if isinstance(a, Var))
    # A value of one element is a scalar local (``scalar_values``): it has no buffer.
    return {v: b for v, b in plan.buffer_of.items() if v not in aliased and v.aval.size != 1}
