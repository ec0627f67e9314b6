"""cumsum: one block per row (all axes but the scanned one), scanning ``scan_block``
elements at a time with a shared-memory inclusive scan (Hillis-Steele) plus the carry of
the chunks before. ``reverse`` scans from the end."""

from __future__ import annotations

import math

from .options import CudaOptions
from .typed_expressions import constant, type_name, wrap
from .writer import Index, KernelSource, KernelWriter


def _add(a: str, b: str, dtype) -> str:
    return f"({a} + {b})" if dtype.kind == "f" else wrap(f"{a} + {b}", dtype)


def cumsum_kernel(w: KernelWriter, options: CudaOptions, header: str) -> KernelSource:
    (eqn,) = [e for e in w.jaxpr.eqns if e.prim.name == "cumsum"]
    (x,) = eqn.inputs
    shape, axis = tuple(x.aval.shape), eqn.params["axis"]
    dtype = eqn.outputs[0].aval.dtype
    rows = shape[:axis] + shape[axis + 1 :]
    n_rows, length = math.prod(rows), shape[axis]
    chunk = options.scan_block
    zero = constant(0, dtype)
    w.line("tid = cuda.threadIdx.x")
    w.line(f"sm_scan = cuda.shared.array({chunk}, {type_name(dtype)})")
    with w.block(f"for r_flat in range(cuda.blockIdx.x, {n_rows}, cuda.gridDim.x):"):
        row_dims = w.delinearize("r_flat", rows)
        w.line(f"carry = {zero}")
        with w.block(f"for c_base in range(0, {length}, {chunk}):"):
            w.line("c_j = c_base + tid")
            position = f"{length - 1} - c_j" if eqn.params["reverse"] else "c_j"
            w.line(f"c_at = {position}")
            dims = row_dims[:axis] + ("c_at",) + row_dims[axis:]
            index = Index(shape, dims=dims)
            w.line(f"c_v = {zero}")
            with w.block(f"if c_j < {length}:"):
                w.line(f"c_v = {w.value(x, index)}", w.eqn_text(eqn))
            w.line("sm_scan[tid] = c_v")
            w.line("cuda.syncthreads()")
            w.line("c_offset = 1")
            with w.block(f"while c_offset < {chunk}:"):
                w.line(f"c_t = {zero}")
                with w.block("if tid >= c_offset:"):
                    w.line("c_t = sm_scan[tid - c_offset]")
                w.line("cuda.syncthreads()")
                w.line(f"c_v = {_add('c_v', 'c_t', dtype)}")
                w.line("sm_scan[tid] = c_v")
                w.line("cuda.syncthreads()")
                w.line("c_offset *= 2")
            with w.block(f"if c_j < {length}:"):
                w.line(f"c_sum = {_add('carry', 'c_v', dtype)}")
                w.bind(eqn.outputs[0], index, "c_sum")
                flat = w.flat(index)
                for param, value in zip(
                    w.output_params, w.values(w.jaxpr.outvars, index), strict=True
                ):
                    w.line(f"{param}[{flat}] = {value}")
            w.line(f"carry = {_add('carry', f'sm_scan[{chunk - 1}]', dtype)}")
            w.line("cuda.syncthreads()  # the chunk's scan has been read")
    blocks = max(1, min(options.max_blocks, n_rows))
    empty = n_rows == 0 or length == 0
    return KernelSource(w.name, w.source(header), w.params, (blocks,), (chunk,), launch=not empty)
