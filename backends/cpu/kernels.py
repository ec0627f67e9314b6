"""Loop kernels: elementwise, reduction and contraction kernels as loop nests.

The generator reads the kernel's sub-jaxpr backwards from its outputs, asking for each
value "at" a ``mapping`` (for each of the value's dims, the iteration dim it follows, or
``None``): an output is wanted at every point of the iteration space, a
``broadcast_in_dim`` operand at the dims it is broadcast along, a reduction's operand at
the kept dims plus the reduced ones. Reading the uses this way first (``_Analysis``)
gives the loops (``group_dimensions``); writing them the same way (``KernelWriter.value``)
gives one scalar statement per equation, placed by ``LoopBuilder``.

A reduction kernel (the kernel contract in ``ir/higher_order.py``) is written as

    for the leading kept dims (prange when large):
        pass 1: acc = init; for the remaining dims: acc = combine(acc, prologue)
        pass 2: ... reductions that read pass 1's results (softmax's sum of exp(x - max))
        outputs over the reduced shape R
        epilogue over the remaining dims: outputs of shape S that read the results

with scalar accumulators when every kept dim comes first (rows), and accumulator arrays
of shape R otherwise (column sums keep the loops in memory order). A reduction with no
kept dim in front (a full sum) splits its first loop into chunks run in parallel, then
combines the partial results in order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...ir import dtypes
from ...ir.core import Eqn, Jaxpr, Literal, Var
from ...ir.primitive import Pattern
from . import scalar
from .loopnest import Group, LoopBuilder, Scalar, Use, group_dimensions

REDUCTIONS = ("reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "argmax", "argmin")
_PASS_THROUGH = ("broadcast_in_dim", "reshape", "squeeze", "expand_dims")
# How many pieces a parallel full reduction is split into: enough to balance the threads.
REDUCTION_CHUNKS = 16


class Unfusable(Exception):
    """The kernel's body is outside the contract; the caller emits its eqns one by one."""


@dataclass
class Kernel:
    """One unit of code generation: a fused kernel, or a plain eqn treated as one."""

    kind: str
    jaxpr: Jaxpr
    inputs: list  # atoms of the program
    outputs: list[Var]
    name: str


# --- the mapping rules, shared by analysis and writing -----------------------------------


def operand_mappings(eqn: Eqn, mapping: tuple, shape: tuple) -> list[tuple | None]:
    """For each input of ``eqn``, the mapping it is needed at when the output is at ``mapping``.

    ``shape`` is the iteration shape; dims of size 1 there are normalised to ``None``.
    """
    prim = eqn.prim.name
    out = eqn.outputs[0].aval
    if eqn.prim.pattern is Pattern.ELEMENTWISE:
        return [mapping if len(x.aval.shape) == len(mapping) else () for x in eqn.inputs]
    if prim == "broadcast_in_dim":
        x = eqn.inputs[0].aval
        dims = eqn.params["broadcast_dimensions"]
        return [
            tuple(mapping[d] if x.shape[k] == out.shape[d] else None for k, d in enumerate(dims))
        ]
    if prim in ("reshape", "squeeze", "expand_dims"):
        x = eqn.inputs[0].aval
        out_live = [k for k, n in enumerate(out.shape) if n != 1]
        in_live = [k for k, n in enumerate(x.shape) if n != 1]
        if [out.shape[k] for k in out_live] != [x.shape[k] for k in in_live]:
            raise Unfusable(f"{prim} that moves data: {x.str_short()} -> {out.str_short()}")
        result: list = [None] * len(x.shape)
        for k_in, k_out in zip(in_live, out_live, strict=True):
            result[k_in] = mapping[k_out]
        return [tuple(result)]
    if prim in REDUCTIONS:
        x = eqn.inputs[0].aval
        axes = _reduced_axes(eqn)
        if x.shape != shape:
            raise Unfusable("reductions of different shapes in one kernel")
        kept = iter(mapping)
        return [
            tuple(
                (d if shape[d] != 1 else None) if d in axes else next(kept)
                for d in range(len(shape))
            )
        ]
    raise Unfusable(f"{prim} inside a loop kernel")


def _reduced_axes(eqn: Eqn) -> tuple[int, ...]:
    params = eqn.params
    return tuple(params["axes"]) if "axes" in params else (params["axis"],)


def identity_mapping(shape: tuple) -> tuple:
    return tuple(d if n != 1 else None for d, n in enumerate(shape))


def kept_mapping(aval_shape: tuple, shape: tuple, reduced: frozenset) -> tuple | None:
    """The mapping of a value of shape ``aval_shape`` over the kept dims of ``shape``."""
    kept = [d for d, n in enumerate(shape) if d not in reduced and n != 1]
    live = [k for k, n in enumerate(aval_shape) if n != 1]
    if [aval_shape[k] for k in live] != [shape[d] for d in kept]:
        return None
    mapping: list = [None] * len(aval_shape)
    for k, d in zip(live, kept, strict=True):
        mapping[k] = d
    return tuple(mapping)


class _Analysis:
    """Which arrays the kernel reads and writes at which mappings (before any code)."""

    def __init__(self, writer: KernelWriter):
        self.writer = writer
        self.seen: set = set()
        self.uses: list[Use] = []
        self.iota_dims: set[int] = set()

    def visit(self, var, mapping: tuple) -> None:
        if isinstance(var, Literal) or var in self.writer.scalars or (var, mapping) in self.seen:
            return
        self.seen.add((var, mapping))
        writer = self.writer
        if var in writer.leaves:
            self.uses.append(Use(writer.leaves[var], var.aval.shape, mapping))
            return
        eqn = writer.producer[var]
        if eqn.prim.name == "iota":
            d = mapping[eqn.params["dimension"]]
            if d is not None:
                self.iota_dims.add(d)
            return
        if eqn.prim.name in REDUCTIONS:
            writer.check_reduction(eqn, mapping)
        for x, m in zip(eqn.inputs, operand_mappings(eqn, mapping, writer.shape), strict=True):
            self.visit(x, m)


class KernelWriter:
    """Writes one loop kernel into a ``LoopBuilder``; ``program`` names and allocates."""

    def __init__(self, program, kernel: Kernel):
        self.program = program
        self.kernel = kernel
        body = kernel.jaxpr
        self.producer = {v: eqn for eqn in body.eqns for v in eqn.outputs}
        self.leaves: dict[Var, str] = {}  # body vars read from arrays: the array's name
        self.scalars: dict[Var, Scalar] = {}  # body vars bound to literals
        for invar, atom in zip(body.invars, kernel.inputs, strict=True):
            if isinstance(atom, Literal):
                self.scalars[invar] = Scalar(program.atom(atom))
            else:
                self.leaves[invar] = program.atom(atom)
        self.reductions = [eqn for eqn in body.eqns if eqn.prim.name in REDUCTIONS]
        self.results: dict[Var, Scalar | Use] = {}  # reduction results, once computed
        # Expensive values a pass computes anyway, kept in an output for the epilogue.
        self.spills: dict[Var, Use] = {}
        self.spilled: set[Var] = set()
        self.in_epilogue = False
        self.shape: tuple = ()
        self.reduced: frozenset[int] = frozenset()

    # --- set-up ---------------------------------------------------------------------------

    def plan(self, shape: tuple, reduced=frozenset(), outputs=()) -> list[Group]:
        """Analyse the body over iteration ``shape`` and choose the loops."""
        self.shape, self.reduced = shape, frozenset(reduced)
        analysis = _Analysis(self)
        uses = []
        for body_out, use in outputs:
            analysis.visit(body_out, use.dims)
            uses.append(use)
        for eqn in self.reductions:
            x = eqn.inputs[0].aval
            if x.shape != shape or set(_reduced_axes(eqn)) != set(reduced):
                raise Unfusable("reductions over different axes in one kernel")
        for eqn in self.reductions:  # a reduction runs even if only a later pass reads it
            analysis.visit(eqn.inputs[0], identity_mapping(shape))
        uses += analysis.uses
        groups = group_dimensions(shape, self.reduced, uses, analysis.iota_dims)
        self.builder = LoopBuilder(groups, self.program.fresh)
        return groups

    def kept_dims(self) -> tuple:
        return tuple(d for d, n in enumerate(self.shape) if d not in self.reduced and n != 1)

    def check_reduction(self, eqn: Eqn, mapping: tuple) -> None:
        if tuple(m for m in mapping if m is not None) != self.kept_dims():
            raise Unfusable("a reduction result read at other dims than it was reduced to")

    # --- values ---------------------------------------------------------------------------

    def value(self, var, mapping: tuple) -> Scalar:
        """The scalar ``var`` holds at the current point, when its dims follow ``mapping``."""
        if isinstance(var, Literal):
            return Scalar(self.program.constant(var.val, var.aval.dtype))
        if var in self.scalars:
            return self.scalars[var]
        builder = self.builder
        key = ("value", var, mapping)
        found = builder.lookup(key)
        if found is not None:
            return found
        prefix = self.program.name(var)
        if var in self.leaves:
            return builder.load(Use(self.leaves[var], var.aval.shape, mapping), prefix)
        if self.in_epilogue and var in self.spills and mapping == self.spills[var].dims:
            return builder.load(self.spills[var], prefix)
        if var in self.results:
            result = self.results[var]
            return result if isinstance(result, Scalar) else builder.load(result, prefix)
        eqn = self.producer[var]
        prim = eqn.prim.name
        if prim in _PASS_THROUGH:
            (m,) = operand_mappings(eqn, mapping, self.shape)
            return self.value(eqn.inputs[0], m)
        if prim == "iota":
            return self._iota(eqn, mapping, key, prefix)
        if eqn.prim.pattern is not Pattern.ELEMENTWISE:
            raise Unfusable(f"{prim} inside a loop kernel")
        operands = [
            self.value(x, m)
            for x, m in zip(eqn.inputs, operand_mappings(eqn, mapping, ()), strict=True)
        ]
        in_dtype = eqn.inputs[-1].aval.dtype  # select's predicate comes first
        expression = scalar.emit(
            self.program, prim, in_dtype, var.aval.dtype, [o.name for o in operands], eqn.params
        )
        deps = frozenset().union(*(o.deps for o in operands))
        return builder.place(key, prefix, expression, deps, self.program.comment(eqn))

    def _iota(self, eqn: Eqn, mapping, key, prefix) -> Scalar:
        d = mapping[eqn.params["dimension"]]
        dtype = eqn.params["dtype"]
        if d is None:
            return Scalar(self.program.constant(0, dtype))
        k = next(k for k, g in enumerate(self.builder.groups) if g.dims == (d,))
        index = self.builder.groups[k].index
        return self.builder.place(
            key, prefix, scalar.cast(dtype, index), frozenset([k]), self.program.comment(eqn)
        )

    def store(self, use: Use, var) -> None:
        element, _ = self.builder.element(use)
        self.builder.write(f"{element} = {self.value(var, use.dims).name}")

    # --- kernels ---------------------------------------------------------------------------

    def write_elementwise(self, outputs: list[tuple], parallel: bool) -> None:
        """Loops over every group; ``outputs`` are (body var, Use of the output array)."""
        builder = self.builder
        for k in range(len(builder.groups)):
            builder.open_loop(k, parallel=parallel and k == 0)
        for var, use in outputs:
            self.store(use, var)
        for _ in builder.groups:
            builder.close()

    def write_reduction(self, r_outputs, s_outputs, threshold: int) -> bool:
        """The reduction kernel of the module doc; returns whether it used prange."""
        builder = self.builder
        groups = builder.groups
        outer = 0
        while outer < len(groups) and not groups[outer].reduced:
            outer += 1
        inner = list(range(outer, len(groups)))
        inner_kept = [k for k in inner if not groups[k].reduced]
        size = math.prod(self.shape)
        large = size >= threshold
        parallel_outer = outer > 0 and large and groups[0].extent >= 2
        chunked = outer == 0 and not inner_kept and large and bool(inner)
        self._plan_spills(s_outputs)
        for k in range(outer):
            builder.open_loop(k, parallel=parallel_outer and k == 0)
        for stage in self._passes():
            if inner_kept:
                self._array_pass(stage, inner, inner_kept)
            elif chunked:
                self._chunked_pass(stage, inner)
            else:
                self._scalar_pass(stage, inner)
        self._loops(
            inner_kept,
            lambda: [self.store(use, var) for var, use in r_outputs],
            skip=not r_outputs,
        )
        parallel_epilogue = outer == 0 and large and bool(inner) and bool(s_outputs)
        self.in_epilogue = True
        self._loops(
            inner,
            lambda: [self.store(use, var) for var, use in s_outputs],
            parallel=parallel_epilogue,
            skip=not s_outputs,
        )
        for _ in range(outer):
            builder.close()
        return parallel_outer or chunked or parallel_epilogue

    def _loops(self, ks, body, parallel=False, skip=False) -> None:
        if skip:
            return
        for n, k in enumerate(ks):
            self.builder.open_loop(k, parallel=parallel and n == 0)
        body()
        for _ in ks:
            self.builder.close()

    def _passes(self) -> list[list[Eqn]]:
        """Reductions grouped by how many reductions they wait for, in order."""
        depth: dict = {}

        def reduction_depth(var) -> int:
            if isinstance(var, Literal) or var in self.leaves or var in self.scalars:
                return 0
            if var not in depth:
                eqn = self.producer[var]
                inner = max((reduction_depth(x) for x in eqn.inputs), default=0)
                depth[var] = inner + (1 if eqn.prim.name in REDUCTIONS else 0)
            return depth[var]

        stages: dict[int, list[Eqn]] = {}
        for eqn in self.reductions:
            stages.setdefault(reduction_depth(eqn.outputs[0]), []).append(eqn)
        return [stages[k] for k in sorted(stages)]

    def _operand(self, eqn: Eqn) -> Scalar:
        var = eqn.inputs[0]
        operand = self.value(var, identity_mapping(self.shape))
        if var in self.spills and var not in self.spilled:
            self.spilled.add(var)
            self.builder.write(f"{self.builder.element(self.spills[var])[0]} = {operand.name}")
        return operand

    def _plan_spills(self, s_outputs) -> None:
        """Keep an expensive reduction operand in an output that the epilogue computes from
        it: softmax's ``exp(x - max)`` is stored while it is summed, then divided in place,
        not computed a second time. (The epilogue reads it before overwriting it.)"""
        operands = [e.inputs[0] for e in self.reductions if isinstance(e.inputs[0], Var)]
        for var, use in s_outputs:
            for operand in operands:
                if (
                    operand not in self.spills
                    and operand.aval == var.aval
                    and operand not in self.leaves
                    and self._costly(operand)
                    and self._reads(var, operand)
                ):
                    self.spills[operand] = use
                    break

    def _costly(self, var) -> bool:
        """Whether computing ``var`` (back to loads and reduction results) is expensive."""
        eqn = self.producer.get(var)
        if eqn is None or eqn.prim.name in REDUCTIONS:
            return False
        return eqn.prim.expensive or any(self._costly(x) for x in eqn.inputs)

    def _reads(self, var, target) -> bool:
        if var is target:
            return True
        eqn = self.producer.get(var)
        if eqn is None or eqn.prim.name in REDUCTIONS:
            return False
        return any(self._reads(x, target) for x in eqn.inputs)

    def _reduced_index(self) -> str:
        reduced = [g for g in self.builder.groups if g.reduced]
        return reduced[0].index if reduced else "0"

    def _scalar_pass(self, stage: list[Eqn], inner: list[int]) -> None:
        accumulators = {eqn: self._init(eqn) for eqn in stage}
        self._loops(inner, lambda: self._accumulate(accumulators))
        outer = frozenset(range(len(self.builder.groups))) - frozenset(inner)
        for eqn, acc in accumulators.items():
            self._finish(eqn, acc[-1], outer)

    def _chunked_pass(self, stage: list[Eqn], inner: list[int]) -> None:
        builder = self.builder
        first = builder.groups[inner[0]]
        step = -(-first.extent // REDUCTION_CHUNKS)
        chunk = self.program.fresh("chunk")
        partials = {}
        for eqn in stage:
            names = []
            for dtype in self._accumulator_dtypes(eqn):
                names.append(self.program.fresh("partial"))
                builder.write(
                    f"{names[-1]} = np.empty({REDUCTION_CHUNKS}, {scalar.dtype_source(dtype)})"
                )
            partials[eqn] = names
        builder.open(f"for {chunk} in prange({REDUCTION_CHUNKS}):")
        accumulators = {eqn: self._init(eqn) for eqn in stage}
        bounds = f"{chunk} * {step}, min(({chunk} + 1) * {step}, {first.extent})"
        builder.open_loop(inner[0], bounds=bounds)
        self._loops(inner[1:], lambda: self._accumulate(accumulators))
        builder.close()
        for eqn, accs in accumulators.items():
            for partial, acc in zip(partials[eqn], accs, strict=True):
                builder.write(f"{partial}[{chunk}] = {acc}")
        builder.close()
        totals = {eqn: self._init(eqn) for eqn in stage}
        builder.open(f"for {chunk} in range({REDUCTION_CHUNKS}):")
        for eqn, names in partials.items():
            values = [f"{name}[{chunk}]" for name in names]
            builder.write(self._combine(eqn, totals[eqn], values[0], values[-1]))
        builder.close()
        for eqn, accs in totals.items():
            self._finish(eqn, accs[-1], frozenset())

    def _array_pass(self, stage: list[Eqn], inner: list[int], inner_kept: list[int]) -> None:
        builder = self.builder
        arrays = {}
        for eqn in stage:
            out = eqn.outputs[0].aval
            dims = kept_mapping(out.shape, self.shape, self.reduced)
            arrays[eqn] = [
                Use(self.program.scratch(out.shape, dtype), out.shape, dims)
                for dtype in self._accumulator_dtypes(eqn)
            ]

        def init():
            for eqn, uses in arrays.items():
                for use, value in zip(uses, _identities(eqn, self.program), strict=True):
                    builder.write(f"{builder.element(use)[0]} = {value}")

        self._loops(inner_kept, init)

        def accumulate():
            accumulators = {
                eqn: [builder.element(use)[0] for use in uses] for eqn, uses in arrays.items()
            }
            for eqn, accs in accumulators.items():
                builder.write(self._combine(eqn, accs, self._operand(eqn).name))

        self._loops(inner, accumulate)
        for eqn, uses in arrays.items():
            self.results[eqn.outputs[0]] = uses[-1]

    def _init(self, eqn: Eqn) -> list[str]:
        names = []
        for value in _identities(eqn, self.program):
            names.append(self.program.fresh("acc"))
            self.builder.write(f"{names[-1]} = {value}")
        return names

    def _accumulate(self, accumulators: dict) -> None:
        for eqn, accs in accumulators.items():
            self.builder.write(self._combine(eqn, accs, self._operand(eqn).name))

    def _combine(self, eqn: Eqn, accs: list[str], value: str, index: str | None = None) -> str:
        """The statement folding ``value`` (at ``index`` for argmax/argmin) into ``accs``."""
        prim = eqn.prim.name
        dtype = eqn.inputs[0].aval.dtype
        if prim in ("argmax", "argmin"):
            best, position = accs
            better = ">" if prim == "argmax" else "<"
            condition = f"{value} {better} {best}"
            if dtype.kind == "f":  # the first NaN wins, as in NumPy
                condition += f" or ({value} != {value} and {best} == {best})"
            index = index if index is not None else self._reduced_index()
            return f"if {condition}:\n    {best} = {value}\n    {position} = {index}"
        (acc,) = accs
        return f"{acc} = {_combiner(prim, dtype, acc, value, self.program)}"

    def _accumulator_dtypes(self, eqn: Eqn) -> list:
        if eqn.prim.name in ("argmax", "argmin"):
            return [eqn.inputs[0].aval.dtype, eqn.params["index_dtype"]]
        return [eqn.outputs[0].aval.dtype]

    def _finish(self, eqn: Eqn, acc: str, deps: frozenset) -> None:
        var = eqn.outputs[0]
        name = self.program.fresh(self.program.name(var))
        self.builder.write(f"{name} = {scalar.cast(var.aval.dtype, acc)}")
        self.results[var] = Scalar(name, deps)


def _combiner(prim: str, dtype: np.dtype, acc: str, value: str, program) -> str:
    if dtype == dtypes.bool_:
        op = "|" if prim in ("reduce_sum", "reduce_max") else "&"
        return f"{acc} {op} {value}"
    if dtype.kind == "f":
        name = {
            "reduce_sum": "add_reassoc",
            "reduce_prod": "mul_reassoc",
            "reduce_max": "maximum",
            "reduce_min": "minimum",
        }[prim]
        return f"{program.function(scalar.INTRINSICS, name)}({acc}, {value})"
    if prim in ("reduce_max", "reduce_min"):
        return f"{prim[-3:]}({acc}, {value})"
    return f"{acc} {'+' if prim == 'reduce_sum' else '*'} {value}"


def _identities(eqn: Eqn, program) -> list[str]:
    """The starting values of a reduction's accumulators."""
    prim = eqn.prim.name
    dtype = eqn.inputs[0].aval.dtype
    if prim in ("reduce_sum", "reduce_prod"):
        return [program.constant(0 if prim == "reduce_sum" else 1, dtype)]
    largest = prim in ("reduce_max", "argmax")
    if dtype == dtypes.bool_:
        start = not largest
    elif dtype.kind == "f":
        start = -np.inf if largest else np.inf
    else:
        info = np.iinfo(dtype)
        start = info.min if largest else info.max
    initial = program.constant(start, dtype)
    return [initial, "0"] if prim in ("argmax", "argmin") else [initial]


def as_kernel(eqn: Eqn) -> Kernel:
    """A fused ``kernel`` eqn as is; any other eqn as a one-eqn kernel of its natural kind."""
    if eqn.prim.name == "kernel":
        p = eqn.params
        return Kernel(p["kind"], p["jaxpr"], list(eqn.inputs), list(eqn.outputs), p["name"])
    invars = [Var(a.aval) for a in eqn.inputs]
    outvars = [Var(v.aval) for v in eqn.outputs]
    body = Jaxpr([], invars, [eqn.replace(inputs=invars, outputs=outvars)], outvars)
    kind = _NATURAL_KINDS.get(eqn.prim.pattern, "opaque")
    return Kernel(kind, body, list(eqn.inputs), list(eqn.outputs), eqn.prim.name)


_NATURAL_KINDS = {
    Pattern.ELEMENTWISE: "elementwise",
    Pattern.BROADCAST: "elementwise",
    Pattern.REDUCTION: "reduction",
    Pattern.CONTRACTION: "contraction",
}


def split_kernel(kernel: Kernel) -> list[Kernel]:
    """The kernel's eqns as one-eqn kernels over program values (for an ``Unfusable`` body)."""
    env: dict = dict(zip(kernel.jaxpr.invars, kernel.inputs, strict=True))
    for var, top in zip(kernel.jaxpr.outvars, kernel.outputs, strict=True):
        if isinstance(var, Var) and var not in env:
            env[var] = top
    kernels = []
    for eqn in kernel.jaxpr.eqns:
        outputs = [env.setdefault(v, Var(v.aval)) for v in eqn.outputs]
        inputs = [env.get(a, a) if isinstance(a, Var) else a for a in eqn.inputs]
        kernels.append(as_kernel(eqn.replace(inputs=inputs, outputs=outputs)))
    for var, top in zip(kernel.jaxpr.outvars, kernel.outputs, strict=True):
        source = env.get(var, var) if isinstance(var, Var) else var
        if source is not top:  # an output that is an input or a literal: a copy kernel
            inner = Var(top.aval)
            copy = Jaxpr([], [inner], [], [inner])
            kernels.append(Kernel("elementwise", copy, [source], [top], "copy"))
    return kernels
