"""Parallel loops of kernels compiled by llvmlite (``llvm_kernels``), run on Numba's threads.

A parallel kernel's ``prange`` loop becomes a function of its own, ``chunk(environment,
start, stop)``, that runs the loop's iterations ``start`` to ``stop`` over the values the
loop reads (arrays' data and scalars, stored in ``environment``). ``run_chunks`` runs
it on Numba's threads: one ``prange`` over as many pieces of the range as the call may
use threads (``threads.numba_threads``, which the executable sets for each call), each
a call of ``chunk`` by its address. It is compiled once per installation and kept in
Numba's disk cache; a kernel calls it by symbol
(``llvm_helpers.external_function``), so each parallel kernel costs llvmlite's compile
of its loops, not Numba's parfor pipeline (0.5-1 s a kernel).
"""

from __future__ import annotations

from llvmlite import ir
from numba import njit, prange, types
from numba.extending import intrinsic

from .threads import numba_threads


@intrinsic
def _call_chunk(typingctx, chunk, environment, start, stop):
    """Call the function at address ``chunk``: ``void(i8*, i64, i64)``."""
    if not all(isinstance(t, types.Integer) for t in (chunk, environment, start, stop)):
        return None

    def codegen(context, builder, signature, values):
        i64, pointer = ir.IntType(64), ir.IntType(8).as_pointer()
        function_type = ir.FunctionType(ir.VoidType(), [pointer, i64, i64])
        target = builder.inttoptr(values[0], function_type.as_pointer())
        builder.call(target, [builder.inttoptr(values[1], pointer), values[2], values[3]])
        return context.get_dummy_value()

    return types.void(chunk, environment, start, stop), codegen


@njit(parallel=True, cache=True, error_model="numpy", no_cfunc_wrapper=True)
def run_chunks(chunk, environment, start, stop):
    """``chunk(environment, a, b)`` over pieces of ``[start, stop)``, one per thread."""
    extent = stop - start
    pieces = max(1, min(numba_threads(), extent))
    for piece in prange(pieces):
        low = start + extent * piece // pieces
        high = start + extent * (piece + 1) // pieces
        _call_chunk(chunk, environment, low, high)
