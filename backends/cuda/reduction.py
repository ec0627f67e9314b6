"""Reduction kernels: reductions of one iteration shape S over the same axes, with their
elementwise prologue fused into the loads and their epilogue into the stores.

The kept axes of S index the outputs ("rows", R); the reduced axes ("elements") are
walked by the lanes of the row's threads. Three layouts:

- rows (the reduced axes are trailing): one group of ``lanes`` consecutive threads per
  row, a warp or less for short rows (several rows per block), up to a whole block for
  long ones; consecutive lanes read consecutive elements.
- columns (other axes): ``column_slots`` adjacent rows per block, so consecutive threads
  read consecutive addresses, each row reduced by ``column_lanes`` threads.
- everything (one row, one level, no S-shaped output): two stages in one kernel; every
  block reduces a grid-stride share to a partial result, and the last block to finish
  (an atomic ticket) reduces the partials and writes the outputs.

Dependent reductions (a sum of exp(x - max)) are successive passes over the row inside
the same loop over rows: pass k folds the reductions of level k, whose prologue may read
the results of earlier levels. Outputs of shape R are written once per row by lane 0;
outputs of shape S are written by a last pass over the row (softmax's normalisation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...ir.core import Var
from . import reducers
from .options import CudaOptions
from .writer import CodegenError, Index, KernelSource, KernelWriter


@dataclass
class ReductionShape:
    shape: tuple  # S, the iteration shape
    axes: tuple  # reduced axes of S
    levels: list  # [[eqn, ...] per level], level 1 first
    row_outputs: list  # (param, atom): outputs with one element per row
    element_outputs: list  # (param, atom): outputs of shape S

    @property
    def kept(self) -> list[int]:
        return [d for d in range(len(self.shape)) if d not in self.axes]

    @property
    def rows(self) -> tuple:
        return tuple(self.shape[d] for d in self.kept)

    @property
    def reduced(self) -> tuple:
        return tuple(self.shape[d] for d in self.axes)

    @property
    def trailing(self) -> bool:
        n = len(self.shape)
        return tuple(self.axes) == tuple(range(n - len(self.axes), n))


def analyse(w: KernelWriter) -> ReductionShape:
    eqns = [e for e in w.jaxpr.eqns if e.prim.name in reducers.REDUCERS]
    shapes_axes = set()
    for eqn in eqns:
        axes = eqn.params.get("axes", (eqn.params.get("axis"),))
        shapes_axes.add((eqn.inputs[0].aval.shape, tuple(sorted(axes))))
    if len(shapes_axes) != 1:
        raise CodegenError(f"cuda codegen: a reduction kernel mixes reductions {shapes_axes}")
    (shape, axes) = shapes_axes.pop()
    level_of: dict = {}  # var -> how many reductions precede it on its longest path
    levels: dict = {}
    for eqn in w.jaxpr.eqns:
        level = max((level_of.get(x, 0) for x in eqn.inputs if isinstance(x, Var)), default=0)
        if eqn.prim.name in reducers.REDUCERS:
            level += 1
            levels.setdefault(level, []).append(eqn)
        for out in eqn.outputs:
            level_of[out] = level
    result = ReductionShape(shape, axes, [levels[k] for k in sorted(levels)], [], [])
    row_size, element_size = math.prod(result.rows), math.prod(shape)
    for param, atom in zip(w.output_params, w.jaxpr.outvars, strict=True):
        if tuple(atom.aval.shape) == tuple(shape):
            result.element_outputs.append((param, atom))
        elif atom.aval.size == row_size:
            result.row_outputs.append((param, atom))
        elif atom.aval.size == element_size:
            result.element_outputs.append((param, atom))
        else:
            raise CodegenError(f"cuda codegen: reduction output of shape {atom.aval.shape}")
    return result


def _power_of_two_at_least(n: int) -> int:
    return 1 << max(0, math.ceil(math.log2(max(n, 1))))


def reduction_kernel(w: KernelWriter, options: CudaOptions, header: str) -> KernelSource:
    shape = analyse(w)
    n_rows, n_elements = math.prod(shape.rows), math.prod(shape.reduced)
    empty = n_rows == 0 or all(atom.aval.size == 0 for atom in w.jaxpr.outvars)
    if n_rows == 1 and len(shape.levels) == 1 and not shape.element_outputs:
        grid, block = _two_stage(w, shape, n_elements, options)
    else:
        grid, block = _per_row(w, shape, n_rows, n_elements, options)
    return KernelSource(w.name, w.source(header), w.params, grid, block, launch=not empty)


def _element_index(w, shape: ReductionShape, row_dims: tuple, row_flat: str, j_flat: str):
    """The S-index of element ``j_flat`` of the row ``row_dims``."""
    element_dims = w.delinearize(j_flat, shape.reduced)
    dims = [None] * len(shape.shape)
    for d, expr in zip(shape.kept, row_dims, strict=True):
        dims[d] = expr
    for d, expr in zip(shape.axes, element_dims, strict=True):
        dims[d] = expr
    n_elements = math.prod(shape.reduced)
    if shape.trailing and row_flat != "0":
        flat = f"{row_flat} * {n_elements} + {j_flat}"
    elif shape.trailing:
        flat = j_flat
    else:
        flat = None
    return Index(tuple(shape.shape), dims=tuple(dims), flat=flat)


def _fold_level(w, shape, accumulators, row_dims, row_flat, j_flat) -> None:
    index = _element_index(w, shape, row_dims, row_flat, j_flat)
    values = w.values([acc.eqn.inputs[0] for acc in accumulators], index)
    for acc, value in zip(accumulators, values, strict=True):
        reducers.fold(w, acc, value, j_flat)


def _bind_results(w, accumulators, row_index: Index) -> None:
    for acc in accumulators:
        value = reducers.result(w, acc)
        if value != acc.value:
            name = w.temp("res")
            w.line(f"{name} = {value}")
            value = name
        w.bind(acc.eqn.outputs[0], row_index, value)


def _store_rows(w, shape, row_flat: str) -> None:
    for param, atom in shape.row_outputs:
        index = Index(tuple(atom.aval.shape), flat=row_flat)
        w.line(f"{param}[{row_flat}] = {w.value(atom, index)}")


def _layout(shape, n_rows, n_elements, options, entry_bytes: int):
    """(lanes, slots per block, rows layout?) for the per-row kernel, within the shared
    memory budget (many accumulators make the block smaller)."""
    rows_layout = shape.trailing or not shape.kept
    shuffle = options.warp_shuffle and rows_layout
    if rows_layout:
        wanted = math.ceil(n_elements / options.items_per_thread)
        lanes = min(_power_of_two_at_least(wanted), options.max_row_lanes)
        slots = max(1, min(max(options.row_block, lanes) // lanes, n_rows))
        if shuffle and lanes * slots < options.warp_size:
            slots = options.warp_size // lanes  # whole warps: shuffles need every lane
    else:
        lanes = min(options.column_lanes, _power_of_two_at_least(n_elements))
        slots = max(1, min(options.column_slots, n_rows))
    while reducers.shared_entries(lanes, slots, shuffle) * entry_bytes > reducers.SHARED_BUDGET:
        if lanes * slots == 1:
            raise CodegenError("cuda codegen: too many reductions for one block's shared memory")
        if slots > 1:
            slots //= 2
        else:
            lanes //= 2
    return lanes, slots, rows_layout


def _per_row(w, shape, n_rows, n_elements, options):
    levels = [reducers.make_accumulators(w, eqns) for eqns in shape.levels]
    everything = [acc for level in levels for acc in level]
    lanes, slots, rows_layout = _layout(
        shape, n_rows, n_elements, options, reducers.entry_bytes(everything)
    )
    threads = lanes * slots
    shuffle = options.warp_shuffle and rows_layout
    w.line("tid = cuda.threadIdx.x")
    if rows_layout:
        w.line(f"lane = tid % {lanes}")
        w.line(f"slot = tid // {lanes}")
    else:
        w.line(f"lane = tid // {slots}")
        w.line(f"slot = tid % {slots}")
    reducers.declare_shared(w, everything, reducers.shared_entries(lanes, slots, shuffle))
    times = f" * {slots}" if slots > 1 else ""
    rows = f"range(cuda.blockIdx.x{times}, {n_rows}, cuda.gridDim.x{times})"
    with w.block(f"for r_base in {rows}:"):
        w.line("r_flat = r_base + slot" if slots > 1 else "r_flat = r_base")
        w.line(f"r_live = r_flat < {n_rows}")
        row_dims = w.delinearize("r_flat", shape.rows)
        row_index = Index(shape.rows, dims=row_dims, flat="r_flat")
        for accumulators in levels:
            reducers.initialise(w, accumulators)
            with w.block("if r_live:"):
                with w.block(f"for j_flat in range(lane, {n_elements}, {lanes}):"):
                    _fold_level(w, shape, accumulators, row_dims, "r_flat", "j_flat")
            reducers.block_reduce(w, accumulators, lanes, 1 if rows_layout else slots, shuffle)
            _bind_results(w, accumulators, row_index)
        if shape.row_outputs:
            with w.block("if r_live and lane == 0:"):
                _store_rows(w, shape, "r_flat")
        if shape.element_outputs and n_elements:
            with w.block("if r_live:"):
                with w.block(f"for j_flat in range(lane, {n_elements}, {lanes}):"):
                    index = _element_index(w, shape, row_dims, "r_flat", "j_flat")
                    flat = w.flat(index)
                    same = [(p, a) for p, a in shape.element_outputs if a.aval.shape == index.shape]
                    for (param, _), value in zip(
                        same, w.values([a for _, a in same], index), strict=True
                    ):
                        w.line(f"{param}[{flat}] = {value}")
                    for param, atom in shape.element_outputs:
                        if (param, atom) not in same:
                            element = Index(tuple(atom.aval.shape), flat=flat)
                            w.line(f"{param}[{flat}] = {w.value(atom, element)}")
    blocks = max(1, min(options.max_blocks, math.ceil(n_rows / slots)))
    return (blocks,), (threads,)


def _two_stage(w, shape, n_elements, options):
    (accumulators,) = [reducers.make_accumulators(w, eqns) for eqns in shape.levels]
    threads, shuffle = options.row_block, options.warp_shuffle
    entry_bytes = reducers.entry_bytes(accumulators)
    while reducers.shared_entries(threads, 1, shuffle) * entry_bytes > reducers.SHARED_BUDGET:
        if threads <= (options.warp_size if shuffle else 1):
            raise CodegenError("cuda codegen: too many reductions for one block's shared memory")
        threads //= 2
    per_block = threads * options.items_per_thread
    blocks = max(1, min(options.max_partials, math.ceil(n_elements / per_block)))
    partials = {}
    for acc in accumulators:
        partials[acc.value] = w.scratch(f"part_{acc.value}", acc.dtype, blocks)
        if acc.is_arg:
            partials[acc.index] = w.scratch(f"part_{acc.index}", "int64", blocks)
    counter = w.scratch("finished_blocks", "int32", 1)
    w.line("tid = cuda.threadIdx.x")
    w.line("lane = tid")
    w.line("slot = 0")
    reducers.declare_shared(w, accumulators, reducers.shared_entries(threads, 1, shuffle))
    w.line("sm_last_block = cuda.shared.array(1, int32)")
    row_dims = ("0",) * len(shape.rows)
    row_index = Index(shape.rows, dims=row_dims, flat="0")
    # Stage 1: every block folds a grid-stride share and publishes its partial result.
    reducers.initialise(w, accumulators)
    with w.block(f"for j_flat in range(cuda.grid(1), {n_elements}, cuda.gridsize(1)):"):
        _fold_level(w, shape, accumulators, row_dims, "0", "j_flat")
    reducers.block_reduce(w, accumulators, threads, 1, options.warp_shuffle)
    with w.block("if tid == 0:"):
        for acc in accumulators:
            w.line(f"{partials[acc.value]}[cuda.blockIdx.x] = {acc.value}")
            if acc.is_arg:
                w.line(f"{partials[acc.index]}[cuda.blockIdx.x] = {acc.index}")
        w.line("cuda.threadfence()  # partials visible before the ticket is taken")
        w.line(f"ticket = cuda.atomic.add({counter}, 0, 1)")
        w.line("sm_last_block[0] = 1 if ticket == cuda.gridDim.x - 1 else 0")
    w.line("cuda.syncthreads()")
    # Stage 2: the last block to finish reduces the partials and writes the outputs.
    with w.block("if sm_last_block[0] == 1:"):
        reducers.initialise(w, accumulators)
        with w.block(f"for j_flat in range(tid, cuda.gridDim.x, {threads}):"):
            for acc in accumulators:
                index = None
                if acc.is_arg:
                    index = w.temp("u")
                    w.line(f"{index} = {partials[acc.index]}[j_flat]")
                partial = w.temp("u")
                w.line(f"{partial} = {partials[acc.value]}[j_flat]")
                reducers.fold_partial(w, acc, partial, index)
        reducers.block_reduce(w, accumulators, threads, 1, options.warp_shuffle)
        with w.block("if tid == 0:"):
            _bind_results(w, accumulators, row_index)
            _store_rows(w, shape, "0")
            w.line(f"{counter}[0] = 0  # ready for the next launch")
    return (blocks,), (threads,)
