"""Contraction kernels: ``dot_general`` as a tiled shared-memory matmul with register
blocking, batched, with the fused elementwise epilogue applied before the store.

Any dimension numbers are read as a batched matmul (B, M, K) x (B, K, N): the batch,
free and contracting axes of each operand are flattened by index arithmetic on the
loads, nothing is transposed in memory. A block owns a ``tile_m x tile_n`` tile of one
batch's output; it walks the contraction ``tile_k`` at a time, staging the operand tiles
in shared memory (the lhs tile stored k-major, so the inner loop reads both tiles along
rows), and each thread accumulates ``thread_m x thread_n`` outputs in registers, strided
by the thread grid so that neighbouring threads store neighbouring columns. Out-of-range
tile elements load as zero, so any M, N, K works. The accumulators then flow through the
epilogue (bias, activation, ...) straight into the stores.
"""

from __future__ import annotations

import dataclasses
import math

from ...ir import dtypes
from . import cublas
from .options import CudaOptions
from .typed_expressions import cast, constant, type_name, wrap
from .writer import CodegenError, Index, KernelSource, KernelWriter


class MatmulShape:
    """dot_general's axes grouped as batch / free / contracting, per operand."""

    def __init__(self, eqn):
        (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = eqn.params["dimension_numbers"]
        self.eqn = eqn
        self.lhs, self.rhs = eqn.inputs
        lhs_shape, rhs_shape = self.lhs.aval.shape, self.rhs.aval.shape
        self.lhs_groups = (lhs_batch, _free(lhs_shape, lhs_batch, lhs_contract), lhs_contract)
        self.rhs_groups = (rhs_batch, rhs_contract, _free(rhs_shape, rhs_batch, rhs_contract))
        self.batch_shape = tuple(lhs_shape[d] for d in lhs_batch)
        self.m_shape = tuple(lhs_shape[d] for d in self.lhs_groups[1])
        self.k_shape = tuple(lhs_shape[d] for d in lhs_contract)
        self.n_shape = tuple(rhs_shape[d] for d in self.rhs_groups[2])
        self.out_shape = self.batch_shape + self.m_shape + self.n_shape
        self.batch, self.m, self.k, self.n = (
            math.prod(s) for s in (self.batch_shape, self.m_shape, self.k_shape, self.n_shape)
        )


def _free(shape, batch, contract) -> tuple:
    return tuple(d for d in range(len(shape)) if d not in batch and d not in contract)


def _operand_index(w, operand, groups, group_dims) -> Index:
    """The operand's index from the dims of its three groups (in the groups' order)."""
    dims = [None] * operand.aval.ndim
    for axes, values in zip(groups, group_dims, strict=True):
        for axis, value in zip(axes, values, strict=True):
            dims[axis] = value
    return Index(tuple(operand.aval.shape), dims=tuple(dims))


def accumulator_dtype(dtype):
    return dtypes.int64 if dtype == dtypes.bool_ else dtype


# An epilogue heavier than this (its ops and outputs, counted one each) runs on a thread
# tile of a quarter the size: each thread's epilogue is unrolled over its tile, and with
# 4 x 4 accumulators a transformer's GELU (eleven ops, seven outputs) or a layer norm's
# backward (fifteen ops) needed more than sm_90's 255 registers and spilled 180-256 bytes
# (``ptxas -v``, ``benchmarks/cuda_kernels.py``); a plain product uses 114-165 registers.
EPILOGUE_LIMIT = 8


def contraction_kernel(w: KernelWriter, options: CudaOptions, header: str) -> KernelSource:
    (eqn,) = [e for e in w.jaxpr.eqns if e.prim.name == "dot_general"]
    mm = MatmulShape(eqn)
    for atom in w.jaxpr.outvars:
        if tuple(atom.aval.shape) != mm.out_shape:
            raise CodegenError(f"cuda codegen: matmul epilogue output {atom.aval.shape}")
    o = tiles_for(w.jaxpr, options)
    acc_dtype = accumulator_dtype(eqn.outputs[0].aval.dtype)
    zero = constant(0, acc_dtype)
    rows, cols = o.tile_m // o.thread_m, o.tile_n // o.thread_n  # the thread grid
    threads = rows * cols
    w.line("tid = cuda.threadIdx.x")
    w.line(f"t_row = tid // {cols}")
    w.line(f"t_col = tid % {cols}")
    kind = type_name(acc_dtype)
    # One column of padding: the transposing stores into it hit 32 different banks.
    w.line(f"sm_lhs = cuda.shared.array(({o.tile_k}, {o.tile_m + 1}), {kind})  # [k, m]")
    w.line(f"sm_rhs = cuda.shared.array(({o.tile_k}, {o.tile_n}), {kind})  # [k, n]")
    w.line(f"m_base = cuda.blockIdx.y * {o.tile_m}")
    w.line(f"n_base = cuda.blockIdx.x * {o.tile_n}")
    with w.block(f"for b_flat in range(cuda.blockIdx.z, {mm.batch}, cuda.gridDim.z):"):
        batch_dims = w.delinearize("b_flat", mm.batch_shape)
        w.line(f"acc = cuda.local.array(({o.thread_m}, {o.thread_n}), {kind})")
        w.line(f"a_frag = cuda.local.array({o.thread_m}, {kind})")
        w.line(f"b_frag = cuda.local.array({o.thread_n}, {kind})")
        with w.block(f"for i in range({o.thread_m}):"):
            with w.block(f"for j in range({o.thread_n}):"):
                w.line(f"acc[i, j] = {zero}")
        with w.block(f"for k_base in range(0, {mm.k}, {o.tile_k}):"):
            _load_tile(w, mm, "lhs", batch_dims, threads, acc_dtype, o)
            _load_tile(w, mm, "rhs", batch_dims, threads, acc_dtype, o)
            w.line("cuda.syncthreads()")
            with w.block(f"for kk in range({o.tile_k}):"):
                with w.block(f"for i in range({o.thread_m}):"):
                    w.line(f"a_frag[i] = sm_lhs[kk, t_row + i * {rows}]")
                with w.block(f"for j in range({o.thread_n}):"):
                    w.line(f"b_frag[j] = sm_rhs[kk, t_col + j * {cols}]")
                with w.block(f"for i in range({o.thread_m}):"):
                    with w.block(f"for j in range({o.thread_n}):"):
                        product = "acc[i, j] + a_frag[i] * b_frag[j]"
                        if acc_dtype == dtypes.int32:
                            product = wrap(product, acc_dtype)
                        w.line(f"acc[i, j] = {product}")
            w.line("cuda.syncthreads()  # the tiles have been used")
        _epilogue(w, mm, batch_dims, rows, cols, o)
    grid = (
        max(1, math.ceil(mm.n / o.tile_n)),
        max(1, math.ceil(mm.m / o.tile_m)),
        max(1, min(mm.batch, 65535)),
    )
    empty = all(atom.aval.size == 0 for atom in w.jaxpr.outvars)
    kernel = KernelSource(w.name, w.source(header), w.params, grid, (threads,), launch=not empty)
    kernel.cublas = cublas.plan(w, mm, options, header)
    return kernel


def tiles_for(jaxpr, options: CudaOptions) -> CudaOptions:
    """``options``, with the block and thread tiles halved in each direction where the
    kernel's epilogue weighs more than ``EPILOGUE_LIMIT``."""
    weight = len(jaxpr.eqns) - 1 + len(jaxpr.outvars)
    if weight <= EPILOGUE_LIMIT or min(options.thread_m, options.thread_n) < 2:
        return options
    return dataclasses.replace(
        options,
        tile_m=options.tile_m // 2,
        tile_n=options.tile_n // 2,
        thread_m=options.thread_m // 2,
        thread_n=options.thread_n // 2,
    )


def _load_tile(w, mm, side, batch_dims, threads, acc_dtype, o) -> None:
    """Stage one operand tile in shared memory; threads take consecutive elements along
    the tile's fast axis (k for the lhs, n for the rhs)."""
    if side == "lhs":
        outer, inner, operand, groups = o.tile_m, o.tile_k, mm.lhs, mm.lhs_groups
        outer_base, outer_size, outer_shape = "m_base", mm.m, mm.m_shape
    else:
        outer, inner, operand, groups = o.tile_k, o.tile_n, mm.rhs, mm.rhs_groups
        outer_base, outer_size, outer_shape = "k_base", mm.k, mm.k_shape
    with w.block(f"for e_{side} in range(tid, {outer * inner}, {threads}):"):
        w.line(f"t_outer = e_{side} // {inner}")
        w.line(f"t_inner = e_{side} % {inner}")
        w.line(f"g_outer = {outer_base} + t_outer")
        inner_base = "k_base" if side == "lhs" else "n_base"
        inner_size = mm.k if side == "lhs" else mm.n
        w.line(f"g_inner = {inner_base} + t_inner")
        w.line(f"v_{side} = {constant(0, acc_dtype)}")
        with w.block(f"if g_outer < {outer_size} and g_inner < {inner_size}:"):
            outer_dims = w.delinearize("g_outer", outer_shape)
            if side == "lhs":
                group_dims = (batch_dims, outer_dims, w.delinearize("g_inner", mm.k_shape))
            else:
                group_dims = (batch_dims, outer_dims, w.delinearize("g_inner", mm.n_shape))
            value = w.value(operand, _operand_index(w, operand, groups, group_dims))
            if operand.aval.dtype != acc_dtype:
                value = cast(value, acc_dtype)
            w.line(f"v_{side} = {value}")
        if side == "lhs":
            w.line("sm_lhs[t_inner, t_outer] = v_lhs")
        else:
            w.line("sm_rhs[t_outer, t_inner] = v_rhs")


def _epilogue(w, mm, batch_dims, rows, cols, o) -> None:
    out_dtype = mm.eqn.outputs[0].aval.dtype
    with w.block(f"for i in range({o.thread_m}):"):
        w.line(f"o_m = m_base + t_row + i * {rows}")
        with w.block(f"for j in range({o.thread_n}):"):
            w.line(f"o_n = n_base + t_col + j * {cols}")
            with w.block(f"if o_m < {mm.m} and o_n < {mm.n}:"):
                dims = (
                    batch_dims + w.delinearize("o_m", mm.m_shape) + w.delinearize("o_n", mm.n_shape)
                )
                index = Index(mm.out_shape, dims=dims)
                total = "acc[i, j]" if out_dtype != dtypes.bool_ else "acc[i, j] != 0"
                w.line(f"dot = {total}", w.eqn_text(mm.eqn))
                w.bind(mm.eqn.outputs[0], index, "dot")
                flat = w.flat(index)
                values = w.values(w.jaxpr.outvars, index)
                for param, value in zip(w.output_params, values, strict=True):
                    w.line(f"{param}[{flat}] = {value}")
