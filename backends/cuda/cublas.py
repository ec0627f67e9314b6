"""Optional: large float matmuls through cuBLAS, by way of CuPy.

Off by default (``CudaOptions(cublas=True)`` turns it on). A contraction kernel
qualifies when CuPy is importable, its product is float32 or float64, its operands are
kernel inputs, or float16/bfloat16 kernel inputs it widens to float32 (``narrow_matmul``
folds those widenings in), and it does at least ``cublas_min_flops``. The batched product
is computed on views of the device buffers, arranged as (batch, m, k) and (batch, k, n)
(CuPy copies only an operand whose axes need reordering):

- float32 and float64 operands: ``cupy.matmul``;
- two float16 or two bfloat16 operands: cuBLAS's ``gemmStridedBatchedEx`` on the 16-bit
  operands, accumulating in float32 on the tensor cores, into a float32 product (the
  float32 product the program computes, which the epilogue rounds to the narrow dtype as
  everywhere else). It is called through ``cupy_backends.cuda.libs.cublas``, the binding
  CuPy's own batched matmul calls, because ``cupy.matmul`` would round the product to
  the operands' dtype itself, and CuPy's arrays may not know bfloat16 at all (numbax
  hands it bfloat16 as its bits, ``uint16``). bfloat16 GEMMs need compute capability 8.0;
- a narrow operand with a float32 one (or bfloat16 on an older GPU): the narrow ones
  widened by CuPy, then ``cupy.matmul`` in float32.

The kernel's epilogue runs as an elementwise kernel over the product, generated
alongside the tiled kernel. Numba and CuPy both use the legacy default stream here, so
the launches stay in order.
"""

from __future__ import annotations

import importlib.util
import math
from dataclasses import dataclass

import numpy as np

from ...ir import dtypes
from ...ir.core import Jaxpr
from .elementwise import map_kernel
from .narrow_floats import is_held_as_bits
from .writer import KernelSource, KernelWriter

# cudaDataType_t (CUDA's library_types.h) of the GEMM's operands and product.
CUDA_DATA_TYPES = {dtypes.float16: 2, dtypes.float32: 0}
if dtypes.bfloat16 is not None:
    CUDA_DATA_TYPES[dtypes.bfloat16] = 14


@dataclass
class CublasPlan:
    lhs_position: int  # kernel input positions of the operands
    rhs_position: int
    lhs_dtype: np.dtype  # as stored: float16 or bfloat16 where the kernel widens it
    rhs_dtype: np.dtype
    lhs_order: tuple  # axes of each operand in (batch, free, contract) order
    rhs_order: tuple  # (batch, contract, free)
    lhs_shape: tuple
    rhs_shape: tuple
    batch: int
    m: int
    k: int
    n: int
    epilogue: KernelSource | None  # None: the product is the only output


def available() -> bool:
    return importlib.util.find_spec("cupy") is not None


def plan(w: KernelWriter, mm, options, header: str) -> CublasPlan | None:
    """How to run this contraction kernel through cuBLAS, or None if it does not qualify."""
    dtype = mm.eqn.outputs[0].aval.dtype
    flops = 2 * mm.batch * mm.m * mm.n * mm.k
    if not (options.cublas and available()) or flops < options.cublas_min_flops:
        return None
    if dtype not in (dtypes.float32, dtypes.float64):
        return None
    body = w.jaxpr
    lhs, rhs = stored_operand(body, mm.lhs), stored_operand(body, mm.rhs)
    if lhs is None or rhs is None or lhs in w.literals or rhs in w.literals:
        return None
    (lb, lf, lc), (rb, rc, rf) = mm.lhs_groups, mm.rhs_groups
    product = mm.eqn.outputs[0]
    epilogue = None
    if body.outvars != [product]:
        rest = [e for e in body.eqns if e is not mm.eqn]
        epilogue_body = Jaxpr([], body.invars + [product], rest, body.outvars)
        writer = KernelWriter(f"{w.name}_epilogue", epilogue_body, w.literals)
        epilogue = map_kernel(writer, options, header + "\n(epilogue after cuBLAS)")
    return CublasPlan(
        body.invars.index(lhs), body.invars.index(rhs), lhs.aval.dtype, rhs.aval.dtype,
        tuple(lb) + tuple(lf) + tuple(lc), tuple(rb) + tuple(rc) + tuple(rf),
        tuple(mm.lhs.aval.shape), tuple(mm.rhs.aval.shape),
        mm.batch, mm.m, mm.k, mm.n, epilogue,
    )  # fmt: skip


def stored_operand(body: Jaxpr, operand):
    """The kernel input a matmul operand is: itself, or the float16/bfloat16 input that
    the kernel widens to it; None for an operand computed otherwise."""
    if operand in body.invars:
        return operand
    for eqn in body.eqns:
        if operand in eqn.outputs:
            source = eqn.inputs[0]
            widens = eqn.prim.name == "convert_element_type" and source in body.invars
            return source if widens and dtypes.is_narrow_float(source.aval.dtype) else None
    return None


def to_cupy(array):
    import cupy

    return cupy.asarray(array)


def from_cupy(array):
    from numba import cuda

    return cuda.as_cuda_array(array)


def run(plan: CublasPlan, inputs: list, outputs: list, epilogue_launch) -> None:
    """The product into ``outputs[0]`` (no epilogue), or through the epilogue kernel."""
    import cupy

    lhs = to_cupy(inputs[plan.lhs_position]).reshape(plan.lhs_shape)
    rhs = to_cupy(inputs[plan.rhs_position]).reshape(plan.rhs_shape)
    lhs = lhs.transpose(plan.lhs_order).reshape(plan.batch, plan.m, plan.k)
    rhs = rhs.transpose(plan.rhs_order).reshape(plan.batch, plan.k, plan.n)
    if plan.lhs_dtype == plan.rhs_dtype and tensor_cores_take(plan.lhs_dtype):
        product = tensor_core_gemm(lhs, rhs, plan.lhs_dtype)
    else:
        product = cupy.matmul(widened(lhs, plan.lhs_dtype), widened(rhs, plan.rhs_dtype))
    product = product.reshape(math.prod((plan.batch, plan.m, plan.n)))
    if plan.epilogue is None:
        to_cupy(outputs[0])[...] = product
        return
    arrays = []
    for param in plan.epilogue.params:
        if param.role == "out":
            arrays.append(outputs[param.position])
        elif param.position == len(inputs):
            arrays.append(from_cupy(product))
        else:
            arrays.append(inputs[param.position])
    epilogue_launch(*arrays)


def tensor_cores_take(dtype) -> bool:
    """Whether cuBLAS multiplies ``dtype`` operands on this GPU's tensor cores: float16
    (compute capability 7.0 on), bfloat16 (8.0 on)."""
    import cupy

    if not dtypes.is_narrow_float(dtype):
        return False
    needed = 80 if is_held_as_bits(dtype) else 70
    return int(cupy.cuda.Device().compute_capability) >= needed


def widened(array, dtype):
    """A CuPy array of the operand's values in float32 if it is narrow (bfloat16 arrives
    as its bits, the upper half of a float32's), else the array itself."""
    import cupy

    if is_held_as_bits(dtype):
        return (array.astype(cupy.uint32) << 16).view(cupy.float32)
    return array.astype(cupy.float32) if dtypes.is_narrow_float(dtype) else array


def tensor_core_gemm(lhs, rhs, dtype):
    """The float32 product of CuPy arrays (batch, m, k) and (batch, k, n) of ``dtype``,
    float16 or bfloat16 (as its bits): cuBLAS's strided batched GEMM on the 16-bit
    operands with float32 accumulation, which cuBLAS runs on the tensor cores (its
    default algorithm since CUDA 11, as CuPy's matmul calls it)."""
    import cupy
    from cupy_backends.cuda.libs import cublas as library

    batch, m, k = lhs.shape
    n = rhs.shape[2]
    if 0 in (batch, m, n, k):
        return cupy.zeros((batch, m, n), cupy.float32)
    product = cupy.empty((batch, m, n), cupy.float32)
    lhs, rhs = cupy.ascontiguousarray(lhs), cupy.ascontiguousarray(rhs)
    one, zero = np.ones((), np.float32), np.zeros((), np.float32)
    kind, result_kind = CUDA_DATA_TYPES[np.dtype(dtype)], CUDA_DATA_TYPES[dtypes.float32]
    # cuBLAS reads column-major matrices, so it sees each C-ordered matrix transposed:
    # it computes product^T (n x m) = rhs^T (n x k) @ lhs^T (k x m).
    library.gemmStridedBatchedEx(
        cupy.cuda.device.get_cublas_handle(), library.CUBLAS_OP_N, library.CUBLAS_OP_N,
        n, m, k, one.ctypes.data,
        rhs.data.ptr, kind, n, k * n,
        lhs.data.ptr, kind, k, m * k,
        zero.ctypes.data, product.data.ptr, result_kind, n, m * n,
        batch, library.CUBLAS_COMPUTE_32F, library.CUBLAS_GEMM_DEFAULT,
    )  # fmt: skip
    return product
