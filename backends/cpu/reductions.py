"""Reduction kernels: reductions over the same axes, their prologue and epilogue.

A reduction kernel (the kernel contract in ``ir/higher_order.py``) iterates over the
reductions' operand shape S and is written as

    for the leading kept dims (prange when large):
        pass 1: acc = init; for the remaining dims: acc = combine(acc, prologue)
        pass 2: ... reductions that read pass 1's results (softmax's sum of exp(x - max))
        outputs over the reduced shape R
        epilogue over the remaining dims: outputs of shape S that read the results

with scalar accumulators when every kept dim comes first (rows), and accumulator arrays
of shape R otherwise (column sums keep the loops in memory order). A reduction with no
kept dim in front (a full sum) splits its first loop into chunks run in parallel, then
combines the partial results in order. Float sums and products accumulate with
``add_reassoc``/``mul_reassoc`` and maxima with ``llvm.maximum``, which LLVM vectorises
into SIMD lanes; an expensive value a pass computes anyway and the epilogue needs again
is kept in the output it becomes (``_plan_spills``).

Float sums are at least as accurate as NumPy's pairwise summation on every layout.
Over a reduced axis that is innermost (rows, full sums) they are blocked
(``_accumulation_loops``): each block of ``SUM_BLOCK`` values sums into a fresh
accumulator of the operand's own dtype, which LLVM spreads over SIMD lanes at full
width, and the block sums are added into a float64 total with Neumaier's compensation.
Column sums (accumulator arrays) accumulate float32 in float64 arrays
(``accumulator_dtypes``): NumPy sums a leading axis serially, in float32. Products keep
their dtype: a wider product would not overflow or underflow where NumPy's does
(``inf * 0`` would become a number), and NumPy's own products are serial.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...ir import dtypes
from ...ir.core import Eqn, Literal, Var
from . import scalar
from .kernels import REDUCTIONS, KernelWriter, identity_mapping, kept_mapping
from .loopnest import Scalar, Use

# How many pieces a parallel full reduction is split into: enough to balance the threads.
REDUCTION_CHUNKS = 16
# Iterations of a blocked float sum per block (``_accumulation_loops``): each of the
# vectoriser's 8 to 64 accumulators then sums 8 to 64 values, as NumPy's pairwise sum
# does at its leaves; the compensated add per block costs a few percent.
SUM_BLOCK = 512
# A row reduction that reads each row several times prefetches its inputs' rows this far
# ahead (``_prefetch_rows_ahead``): one row ahead gained 15% on a 4096x1024 layer norm,
# two 19%. Rows of other lengths are left to the hardware: two long ones would crowd the
# L1 cache, and a short row's passes are over before the memory system idles.
PREFETCH_ROWS_AHEAD = 2
PREFETCH_ROW_BYTES = range(1024, 16 * 1024 + 1)
# A column reduction (reduced dims first) splits its reduced loop into chunks when its
# kept dims hold at most this many elements: each chunk's accumulators are that large.
CHUNKED_COLUMNS_MAX = 1 << 14


@dataclass(frozen=True)
class _ChunkViews:
    lines: list[str]  # the statements that name one chunk's accumulator arrays
    uses: dict  # per reduction, its accumulators in the chunk


class ReductionWriter(KernelWriter):
    """Writes one reduction kernel into its ``LoopBuilder``."""

    def __init__(self, program, kernel):
        super().__init__(program, kernel)
        # Expensive values a pass computes anyway, kept in an output for the epilogue.
        self.spills: dict[Var, Use] = {}
        self.spilled: set[Var] = set()
        # Conversions of accumulator arrays to their results' dtype (``_narrowed``), not
        # yet written: they go into the next loops over the kept dims, not loops of
        # their own (each loop nest costs Numba and LLVM compile time).
        self.pending: list = []

    def write(self, r_outputs, s_outputs, large: bool) -> bool:
        """The reduction kernel of the module doc; returns whether it used prange.

        ``large``: the kernel is worth running on all cores."""
        builder = self.builder
        groups = builder.groups
        outer = 0
        while outer < len(groups) and not groups[outer].reduced:
            outer += 1
        inner = list(range(outer, len(groups)))
        inner_kept = [k for k in inner if not groups[k].reduced]
        parallel_outer = outer > 0 and large and groups[0].extent >= 2
        chunked = outer == 0 and not inner_kept and large and bool(inner)
        kept_size = math.prod(groups[k].extent for k in inner_kept)
        chunked_columns = outer == 0 and bool(inner_kept) and large and groups[0].extent >= 2
        chunked_columns = chunked_columns and kept_size <= CHUNKED_COLUMNS_MAX
        self._plan_spills(s_outputs)
        for k in range(outer):
            builder.open_loop(k, parallel=parallel_outer and k == 0)
        passes = self._passes()
        # Rows that the passes and the epilogue read more than once, split over the cores.
        prefetch = parallel_outer and outer == 1 and not inner_kept
        prefetch = prefetch and len(passes) + bool(s_outputs) > 1
        for n, stage in enumerate(passes):
            if chunked_columns:
                self._chunked_array_pass(stage, inner, inner_kept)
            elif inner_kept:
                self._array_pass(stage, inner, inner_kept)
            elif chunked:
                self._chunked_pass(stage, inner)
            else:
                self._scalar_pass(stage, inner)
            if n == 0 and prefetch:
                self._prefetch_rows_ahead()

        def reduced_outputs():
            self._flush()
            for var, use in r_outputs:
                self.store(use, var)

        self._loops(inner_kept, reduced_outputs, skip=not r_outputs and not self.pending)
        # An output that is a reduction's operand was stored by the pass that computed it.
        s_outputs = [(var, use) for var, use in s_outputs if self.spills.get(var) != use]
        parallel_epilogue = outer == 0 and large and bool(inner) and bool(s_outputs)
        self.stored.update(self.spills)
        self._loops(
            inner,
            lambda: [self.store(use, var) for var, use in s_outputs],
            parallel=parallel_epilogue,
            skip=not s_outputs,
        )
        for _ in range(outer):
            builder.close()
        return parallel_outer or chunked or chunked_columns or parallel_epilogue

    def _prefetch_rows_ahead(self) -> None:
        """Prefetch each input's row ``PREFETCH_ROWS_AHEAD`` rows on, once the first pass has
        read this row, in a kernel that reads every row more than once: the later passes
        run from the cache, and without a prefetch the memory system would idle while they
        do (a 4096x1024 float32 layer norm, 2 threads: 2.2 ms -> 1.8 ms). Issued before the
        first pass, the prefetches compete with its loads and gained nothing."""
        first = self.builder.groups[0]
        row = math.prod(self.shape) // first.extent
        dtypes_of = {name: var.aval.dtype for var, name in self.leaves.items()}
        whole = identity_mapping(self.shape)
        arrays = {
            use.array
            for use in self.uses
            if use.array in dtypes_of and use.dims == whole and not use.window
        }
        prefetch = self.program.function(scalar.INTRINSICS, "prefetch_span")
        for array in sorted(arrays):
            if row * dtypes_of[array].itemsize in PREFETCH_ROW_BYTES:
                start = f"({first.index} + {PREFETCH_ROWS_AHEAD}) * {row}"
                self.builder.write(f"{prefetch}({array}, {start}, {row})")

    def _loops(self, ks, body, parallel=False, skip=False, bounds=None) -> None:
        """Loops over the groups ``ks`` around ``body``; ``bounds``, (start, stop), limit
        the first."""
        if skip:
            return
        for n, k in enumerate(ks):
            first_bounds = ", ".join(bounds) if bounds and n == 0 else None
            self.builder.open_loop(k, parallel=parallel and n == 0, bounds=first_bounds)
        body()
        for _ in ks:
            self.builder.close()

    def _passes(self) -> list[list[Eqn]]:
        """Reductions grouped by how many reductions they wait for, in order."""
        depth: dict = {}

        def reduction_depth(var) -> int:
            # Post-order from an explicit stack: the chain of eqns may be long.
            stack = [var]
            while stack:
                top = stack[-1]
                if isinstance(top, Literal) or top in self.leaves or top in self.scalars:
                    depth[top] = 0
                if top in depth:
                    stack.pop()
                    continue
                eqn = self.producer[top]
                pending = [x for x in eqn.inputs if x not in depth]
                if pending:
                    stack.extend(pending)
                    continue
                stack.pop()
                inner = max((depth[x] for x in eqn.inputs), default=0)
                depth[top] = inner + (1 if eqn.prim.name in REDUCTIONS else 0)
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
        not computed a second time. (The epilogue reads it before overwriting it.) An
        operand that is itself an output is stored by the pass however cheap it is: a
        bias gradient's ``sum(g, axis=0)`` beside ``g`` (a col2im's nine padded reads and
        a relu mask, 2 ms of a CNN step) computed it twice."""
        operands = [e.inputs[0] for e in self.reductions if isinstance(e.inputs[0], Var)]
        for var, use in s_outputs:
            for operand in operands:
                if (
                    operand not in self.spills
                    and operand.aval == var.aval
                    and operand not in self.leaves
                    and (operand is var or self._costly(operand))
                    and self._reads(var, operand)
                ):
                    self.spills[operand] = use
                    break

    def _costly(self, var) -> bool:
        """Whether computing ``var`` (back to loads and reduction results) is expensive."""
        return any(self.producer[v].prim.expensive for v in self._computed(var))

    def _reads(self, var, target) -> bool:
        return target is var or any(target in self.producer[v].inputs for v in self._computed(var))

    def _computed(self, var) -> set:
        """``var`` and the values it is computed from here, back to loads and reduction
        results (those are not entered). A worklist: a prologue is as deep as it is long."""
        computed, work = set(), [var]
        while work:
            var = work.pop()
            eqn = self.producer.get(var)
            if var in computed or eqn is None or eqn.prim.name in REDUCTIONS:
                continue
            computed.add(var)
            work.extend(eqn.inputs)
        return computed

    def _reduced_index(self) -> str:
        reduced = [g for g in self.builder.groups if g.reduced]
        return reduced[0].index if reduced else "0"

    def _scalar_pass(self, stage: list[Eqn], inner: list[int]) -> None:
        accumulators = {eqn: self._init(eqn) for eqn in stage}
        self._accumulation_loops(inner, accumulators)
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
            for dtype in accumulator_dtypes(eqn):
                names.append(self.program.fresh("partial"))
                builder.write(
                    f"{names[-1]} = np.empty({REDUCTION_CHUNKS}, {scalar.dtype_source(dtype)})"
                )
            partials[eqn] = names
        builder.open(f"for {chunk} in prange({REDUCTION_CHUNKS}):")
        accumulators = {eqn: self._init(eqn) for eqn in stage}
        bounds = (f"{chunk} * {step}", f"min(({chunk} + 1) * {step}, {first.extent})")
        self._accumulation_loops(inner, accumulators, bounds)
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
                for dtype in accumulator_dtypes(eqn)
            ]

        def init():
            self._flush()
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
            self.results[eqn.outputs[0]] = self._narrowed(eqn, uses[-1])

    def _chunked_array_pass(self, stage: list[Eqn], inner: list[int], inner_kept) -> None:
        """``_array_pass`` with the first (reduced) loop split into ``REDUCTION_CHUNKS``
        pieces run in parallel, each folding into an accumulator array of its own, which
        are then combined in order: column sums (a bias gradient over a batch of images)
        on every core, with the same result whatever the thread count."""
        builder = self.builder
        shape = tuple(builder.groups[k].extent for k in inner_kept)
        dims = tuple(builder.groups[k].dims[0] for k in inner_kept)
        totals, partials = {}, {}
        for eqn in stage:
            out = eqn.outputs[0].aval
            kept = kept_mapping(out.shape, self.shape, self.reduced)
            totals[eqn] = [
                Use(self.program.scratch(out.shape, dtype), out.shape, kept)
                for dtype in accumulator_dtypes(eqn)
            ]
            partials[eqn] = [
                self.program.scratch((REDUCTION_CHUNKS, *shape), dtype)
                for dtype in accumulator_dtypes(eqn)
            ]

        def init():  # the earlier passes' results, converted, before this pass reads them
            self._flush()
            for eqn, uses in totals.items():
                for use, value in zip(uses, _identities(eqn, self.program), strict=True):
                    builder.write(f"{builder.element(use)[0]} = {value}")

        self._loops(inner_kept, init)
        chunk = self.program.fresh("chunk")
        pieces = self._chunk_views(chunk, partials, shape, dims)
        first = builder.groups[inner[0]]
        step = -(-first.extent // REDUCTION_CHUNKS)
        builder.open(f"for {chunk} in prange({REDUCTION_CHUNKS}):")
        for line in pieces.lines:
            builder.write(line)

        def start():
            for eqn, uses in pieces.uses.items():
                for use, value in zip(uses, _identities(eqn, self.program), strict=True):
                    builder.write(f"{builder.element(use)[0]} = {value}")

        def accumulate():
            for eqn, uses in pieces.uses.items():
                accs = [builder.element(use)[0] for use in uses]
                builder.write(self._combine(eqn, accs, self._operand(eqn).name))

        self._loops(inner_kept, start)
        bounds = (f"{chunk} * {step}", f"min(({chunk} + 1) * {step}, {first.extent})")
        self._loops(inner, accumulate, bounds=bounds)
        builder.close()
        builder.open(f"for {chunk} in range({REDUCTION_CHUNKS}):")
        for line in pieces.lines:
            builder.write(line)

        def combine():
            for eqn, uses in pieces.uses.items():
                values = [builder.element(use)[0] for use in uses]
                accs = [builder.element(use)[0] for use in totals[eqn]]
                builder.write(self._combine(eqn, accs, values[0], values[-1]))

        self._loops(inner_kept, combine)
        builder.close()
        for eqn, uses in totals.items():
            self.results[eqn.outputs[0]] = self._narrowed(eqn, uses[-1])

    def _chunk_views(self, chunk: str, partials: dict, shape: tuple, dims: tuple):
        """Each chunk's accumulator arrays (``partials[eqn][k][chunk]``) as the lines that
        name them and their ``Use``s: one array dimension per kept loop, so the builder
        indexes them as they are (a reshaped view would be made before the loops, where
        ``chunk`` is not yet bound)."""
        lines, uses = [], {}
        for eqn, names in partials.items():
            uses[eqn] = []
            for name in names:
                piece = self.program.fresh(f"{name}_piece")
                lines.append(f"{piece} = {name}[{chunk}]")
                self.builder.views[(piece, shape)] = piece
                uses[eqn].append(Use(piece, shape, dims))
        return _ChunkViews(lines, uses)

    def _narrowed(self, eqn: Eqn, accumulator: Use) -> Use:
        """The accumulator array, or a copy in the output's dtype when it is wider: what
        reads the result must see the reduction's dtype."""
        out = eqn.outputs[0].aval
        if accumulator_dtypes(eqn)[-1] == out.dtype:
            return accumulator
        narrow = Use(self.program.scratch(out.shape, out.dtype), out.shape, accumulator.dims)
        element = self.builder.element

        def convert():
            wide = element(accumulator)[0]
            self.builder.write(f"{element(narrow)[0]} = {scalar.cast(out.dtype, wide)}")

        self.pending.append(convert)
        return narrow

    def _flush(self) -> None:
        """Write the pending conversions into the loops being written."""
        for convert in self.pending:
            convert()
        self.pending.clear()

    def _init(self, eqn: Eqn) -> list[str]:
        names = []
        for value in _identities(eqn, self.program):
            names.append(self.program.fresh("acc"))
            self.builder.write(f"{names[-1]} = {value}")
        return names

    def _accumulation_loops(self, inner: list[int], accumulators: dict, bounds=None) -> None:
        """The loops over ``inner`` (the first within ``bounds``, (start, stop), when given)
        folding every operand into its accumulator.

        Float sums are blocked: every run of the innermost loop, cut to ``SUM_BLOCK``
        iterations, sums into a fresh accumulator of the operand's dtype (vectorised into
        SIMD lanes), and the block sums are added to the float64 total with Neumaier's
        compensation: the error is that of one block plus about one rounding, below
        NumPy's pairwise summation."""
        builder = self.builder
        blocked = [eqn for eqn in accumulators if _blocked_sum(eqn)]
        if not blocked:
            self._loops(inner, lambda: self._accumulate(accumulators), bounds=bounds)
            return
        outer, innermost = inner[:-1], inner[-1]
        start, stop = bounds if bounds and not outer else ("0", builder.groups[innermost].extent)
        compensations = {}
        for eqn in blocked:
            compensations[eqn] = self.program.fresh("compensation")
            builder.write(f"{compensations[eqn]} = {_identities(eqn, self.program)[0]}")
        for n, k in enumerate(outer):
            builder.open_loop(k, bounds=None if n or not bounds else ", ".join(bounds))
        # A run that fits in one block needs no loop over blocks.
        one_block = not bounds and builder.groups[innermost].extent <= SUM_BLOCK
        if not one_block:
            block = self.program.fresh("block")
            builder.open(f"for {block} in range({start}, {stop}, {SUM_BLOCK}):")
        block_sums = {}
        for eqn in blocked:
            block_sums[eqn] = self.program.fresh("block_sum")
            zero = self.program.constant(0, eqn.inputs[0].aval.dtype)
            builder.write(f"{block_sums[eqn]} = {zero}")
        block_bounds = None if one_block else f"{block}, min({block} + {SUM_BLOCK}, {stop})"
        builder.open_loop(innermost, bounds=block_bounds)
        self._accumulate({eqn: accumulators[eqn] for eqn in accumulators if eqn not in blocked})
        for eqn in blocked:  # in the operand's dtype: full SIMD width
            dtype, operand = eqn.inputs[0].aval.dtype, self._operand(eqn).name
            fold = _combiner("reduce_sum", dtype, block_sums[eqn], operand, self.program)
            builder.write(f"{block_sums[eqn]} = {fold}")
        builder.close()
        add = self.program.function(scalar.INTRINSICS, "compensated_add")
        for eqn in blocked:
            total, compensation = accumulators[eqn][0], compensations[eqn]
            block_sum = scalar.cast(dtypes.float64, block_sums[eqn])
            builder.write(f"{total}, {compensation} = {add}({total}, {compensation}, {block_sum})")
        if not one_block:
            builder.close()
        for _ in outer:
            builder.close()
        finish = self.program.function(scalar.INTRINSICS, "compensated_total")
        for eqn in blocked:
            total = accumulators[eqn][0]
            builder.write(f"{total} = {finish}({total}, {compensations[eqn]})")

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
        (acc_dtype,) = accumulator_dtypes(eqn)
        if dtype.kind == "f" and acc_dtype != dtype:
            value = scalar.cast(acc_dtype, value)
        return f"{acc} = {_combiner(prim, dtype, acc, value, self.program)}"

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


def _blocked_sum(eqn: Eqn) -> bool:
    return eqn.prim.name == "reduce_sum" and eqn.inputs[0].aval.dtype.kind == "f"


def accumulator_dtypes(eqn: Eqn) -> list[np.dtype]:
    """The dtypes of a reduction's accumulators (see the module doc for wide sums)."""
    prim = eqn.prim.name
    dtype = eqn.inputs[0].aval.dtype
    if prim in ("argmax", "argmin"):
        return [dtype, eqn.params["index_dtype"]]
    if prim == "reduce_sum" and dtype.kind == "f" and dtype.itemsize < 8:
        return [dtypes.float64]
    return [eqn.outputs[0].aval.dtype]


def _identities(eqn: Eqn, program) -> list[str]:
    """The starting values of a reduction's accumulators."""
    prim = eqn.prim.name
    dtype = eqn.inputs[0].aval.dtype
    if prim in ("reduce_sum", "reduce_prod"):
        (acc_dtype,) = accumulator_dtypes(eqn)
        return [program.constant(0 if prim == "reduce_sum" else 1, acc_dtype)]
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
