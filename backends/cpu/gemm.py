"""A product kernel's BLAS call: ``sgemm``/``dgemm`` straight from SciPy's BLAS (``units``).

Imported by generated product kernels only (as ``nbx_gemm``). Numba's ``np.dot`` types
and lowers its checks, copies and dispatch for every call site, which made a product
kernel cost 0.2 s to compile; a product kernel knows its shapes, layouts and which
operand BLAS reads transposed, so it calls ``gemm`` itself: an intrinsic that passes
the arrays' data pointers and the sizes, by reference as Fortran wants. The functions
are linked under symbols of their own (``numbax_sgemm``, ``numbax_dgemm``) as
``blas.py`` and ``lapack.py`` link theirs, so a kernel cached on disk holds no address.
A large product calls ``blocked_gemm``: ``gemm`` in blocks on the call's threads.
"""

from __future__ import annotations

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.core import cgutils
from numba.core.errors import TypingError
from numba.extending import get_cython_function_address, intrinsic

from .contraction import COLUMNS, DEPTH

for _name in ("sgemm", "dgemm"):
    llvm.add_symbol(
        f"numbax_{_name}", get_cython_function_address("scipy.linalg.cython_blas", _name)
    )


@intrinsic
def gemm(typingctx, a, b, c, offsets, transposed, sizes, leading):
    """``c = op(a) @ op(b)`` for row-major matrices inside arrays: ``op(a)`` is ``rows`` x
    ``depth`` and starts ``offsets[0]`` elements into ``a``, its rows ``leading[0]``
    elements apart, or stored transposed (``depth`` x ``rows``, rows of ``rows``
    elements ``leading[0]`` apart) where ``transposed[0]``; ``op(b)`` is ``depth`` x
    ``columns``, likewise; ``c`` is ``rows`` x ``columns`` from ``offsets[2]``, its rows
    ``columns`` apart, or ``leading[2]`` where ``leading`` has three entries. ``sizes``
    is (rows, columns, depth). Only the arrays' data
    pointers are read, so a kernel passes its arrays whole and a batch's matrix, or a
    strided view of one (``x.transpose(0, 2, 1, 3)``'s), by its offset and leading
    dimension: BLAS reads it where it lies."""
    arrays = (a, b, c)
    if not all(isinstance(x, types.Array) and x.layout == "C" for x in arrays):
        raise TypingError(f"gemm multiplies C-contiguous arrays, not {arrays}")
    if len({x.dtype for x in arrays}) != 1 or a.dtype not in (types.float32, types.float64):
        raise TypingError(f"gemm multiplies float32 or float64 arrays, not {arrays}")
    for name, group, count in (("offsets", offsets, 3), ("transposed", transposed, 2)):
        if not (isinstance(group, types.UniTuple) and group.count == count):
            raise TypingError(f"gemm's {name} are a tuple of {count} integers, not {group}")
    symbol = "numbax_sgemm" if a.dtype == types.float32 else "numbax_dgemm"

    def codegen(context, builder, signature, values):
        i32, i8 = ir.IntType(32), ir.IntType(8)
        real = context.get_value_type(signature.args[0].dtype)
        starts = cgutils.unpack_tuple(builder, values[3])
        data = [
            builder.gep(context.make_array(t)(context, builder, v).data, [start])
            for t, v, start in zip(signature.args[:3], values[:3], starts, strict=True)
        ]
        m, n, k = (builder.trunc(v, i32) for v in cgutils.unpack_tuple(builder, values[5]))
        strides = [builder.trunc(v, i32) for v in cgutils.unpack_tuple(builder, values[6])]
        lda, ldb, ldc = (*strides, n)[:3]
        a_t, b_t = cgutils.unpack_tuple(builder, values[4])

        def by_reference(value):  # in the entry block: the call may sit in a loop
            return cgutils.alloca_once_value(builder, value)

        def flag(value):  # 'T' or 'N'
            transposed = builder.icmp_signed("!=", value, ir.Constant(value.type, 0))
            return builder.select(transposed, ir.Constant(i8, ord("T")), ir.Constant(i8, ord("N")))

        # Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T.
        pointer = real.as_pointer()
        arguments = [
            by_reference(flag(b_t)),
            by_reference(flag(a_t)),
            by_reference(n),
            by_reference(m),
            by_reference(k),
            by_reference(ir.Constant(real, 1.0)),
            builder.bitcast(data[1], pointer),
            by_reference(ldb),
            builder.bitcast(data[0], pointer),
            by_reference(lda),
            by_reference(ir.Constant(real, 0.0)),
            builder.bitcast(data[2], pointer),
            by_reference(ldc),
        ]
        function_type = ir.FunctionType(ir.VoidType(), [x.type for x in arguments])
        function = cgutils.get_or_insert_function(builder.module, function_type, symbol)
        builder.call(function, arguments)
        return context.get_dummy_value()

    return types.void(a, b, c, offsets, transposed, sizes, leading), codegen


@njit(parallel=True, cache=True, error_model="numpy", no_cfunc_wrapper=True)
def blocked_gemm(a, b, c, offsets, transposed, sizes, leading, split, threads, least):
    """``gemm`` split into blocks, one single-threaded call per block in one ``prange``:
    blocks of ``op(a)``'s rows, of ``op(b)``'s columns, or of the depth (each block's
    product into an array of its own, added into ``c`` in block order), as ``split``
    says. At most ``threads`` blocks of at least ``least`` rows, columns or depth. The
    arrays are one-dimensional (the product units pass their arrays flattened): one
    compiled function per dtype, kept in Numba's disk cache, which every large product
    unit calls instead of running a parallel loop of its own (a unit with a ``prange``
    took 0.6 s longer to compile)."""
    rows, columns, depth = sizes
    a_transposed, b_transposed = transposed
    a_leading, b_leading = leading
    extent = depth if split == DEPTH else columns if split == COLUMNS else rows
    blocks = max(1, min(threads, extent // max(least, 1)))
    step = (extent + blocks - 1) // blocks
    if split == DEPTH:
        size = rows * columns
        partial = np.empty(blocks * size, c.dtype)
        for block in prange(blocks):
            low = min(block * step, depth)
            high = min(low + step, depth)
            a_start = offsets[0] + (low * a_leading if a_transposed else low)
            b_start = offsets[1] + (low if b_transposed else low * b_leading)
            starts = (a_start, b_start, block * size)
            gemm(a, b, partial, starts, transposed, (rows, columns, high - low), leading)
        for i in range(size):
            c[offsets[2] + i] = partial[i]
        for other in range(1, blocks):
            for i in range(size):
                c[offsets[2] + i] += partial[other * size + i]
    elif split == COLUMNS:
        for block in prange(blocks):
            low = min(block * step, columns)
            high = min(low + step, columns)
            b_start = offsets[1] + (low * b_leading if b_transposed else low)
            starts = (offsets[0], b_start, offsets[2] + low)
            whole_rows = (a_leading, b_leading, columns)
            gemm(a, b, c, starts, transposed, (rows, high - low, depth), whole_rows)
    else:
        for block in prange(blocks):
            low = min(block * step, rows)
            high = min(low + step, rows)
            a_start = offsets[0] + (low if a_transposed else low * a_leading)
            starts = (a_start, offsets[1], offsets[2] + low * columns)
            gemm(a, b, c, starts, transposed, (high - low, columns, depth), leading)
