"""Optional: large float matmuls through cuBLAS, by way of CuPy.

Off by default (``CudaOptions(cublas=True)`` turns it on). A contraction kernel
qualifies when CuPy is importable, its dtype is float32 or float64, its operands are
kernel inputs (no prologue) and it does at least ``cublas_min_flops``. Then
``cupy.matmul`` computes the batched product on views of the device buffers (arranged
as (batch, m, k) and (batch, k, n); CuPy copies only an operand whose axes need
reordering), and the kernel's epilogue runs as an elementwise kernel over the product,
generated alongside the tiled kernel. Numba and CuPy both use the legacy default stream
here, so the launches stay in order.
"""

from __future__ import annotations

import importlib.util
import math
from dataclasses import dataclass

from ...ir import dtypes
from ...ir.core import Jaxpr
from .elementwise import map_kernel
from .writer import KernelSource, KernelWriter


@dataclass
class CublasPlan:
    lhs_position: int  # kernel input positions of the operands
    rhs_position: int
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
    if mm.lhs not in body.invars or mm.rhs not in body.invars:
        return None
    if mm.lhs in w.literals or mm.rhs in w.literals:
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
        body.invars.index(mm.lhs), body.invars.index(mm.rhs),
        tuple(lb) + tuple(lf) + tuple(lc), tuple(rb) + tuple(rc) + tuple(rf),
        tuple(mm.lhs.aval.shape), tuple(mm.rhs.aval.shape),
        mm.batch, mm.m, mm.k, mm.n, epilogue,
    )  # fmt: skip


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
    product = cupy.matmul(lhs, rhs).reshape(math.prod((plan.batch, plan.m, plan.n)))
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
