"""A product kernel's BLAS call: ``sgemm``/``dgemm`` straight from SciPy's BLAS (``units``).

Imported by generated product kernels only (as ``nbx_gemm``). Numba's ``np.dot`` types
and lowers its checks, copies and dispatch for every call site, which made a product
kernel cost 0.2 s to compile; a product kernel knows its shapes, layouts and which
operand BLAS reads transposed, so it calls ``gemm`` itself: an intrinsic that passes
the arrays' data pointers and the sizes, by reference as Fortran wants. The functions
are linked under symbols of their own (``numbax_sgemm``, ``numbax_dgemm``) as
``blas.py`` and ``lapack.py`` link theirs, so a kernel cached on disk holds no address.
A large product calls ``blocked_gemm``: ``gemm`` in blocks on the call's threads. On a
processor with AVX-512, a float product of enough multiplies calls numbax's own packed
product instead of BLAS's (``packed_gemm``).
"""

from __future__ import annotations

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.core import cgutils
from numba.core.errors import TypingError
from numba.extending import get_cython_function_address, intrinsic

from . import calibration, packed_gemm
from .calibration import parallel_flops
from .contraction import COLUMNS, DEPTH
from .packed_gemm import LEAST_MULTIPLIES, PACKED_ROWS_READ_T

if packed_gemm.available():
    packed_gemm.compiled()
calibration.load()  # before any kernel calling ``blocked_gemm`` runs
for _name in ("sgemm", "dgemm", "sgemv", "dgemv"):
    llvm.add_symbol(
        f"numbax_{_name}", get_cython_function_address("scipy.linalg.cython_blas", _name)
    )


# BLAS's small-matrix kernels (OpenBLAS's on AVX-512: ``*gemm_small_kernel_permit_skylakex.c``)
# multiply without packing a product of at most ``SMALL_MULTIPLIES`` multiplies (with op(b)
# read transposed, at most ``SMALL_CELLS`` cells of c and a depth of ``SMALL_DEPTH_T``);
# one more multiply and OpenBLAS packs all of op(b) for the product's few rows: an LSTM
# cell's 16 x 128 @ 128 x 512 (float32, one thread) took 36-53 us in one call and 21-24 us
# in two calls of 256 columns; its gradient's 16 x 512 @ (128 x 512)^T, 44 against 25 us
# in two calls of 64. A product of at most ``SMALL_ROWS`` rows above the bound runs as calls of
# column chunks within it, as even as ``SMALL_ALIGN`` columns allow and at least
# ``SMALL_LEAST`` wide, where that beat one call on this machine (``calibration.SMALL_BITS``).
SMALL_ROWS = 16
SMALL_MULTIPLIES = 100**3
SMALL_CELLS, SMALL_DEPTH_T = 1200, 32
SMALL_ALIGN, SMALL_LEAST = 16, 32


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
    dimension: BLAS reads it where it lies.

    A product of one column or one row is a matrix-vector product, ``gemv``: OpenBLAS's
    ``gemm`` with one column ran PolyBench's Cholesky (a 400 x 400 by 400 product in each
    of 400 steps) in 25.8 ms against 5.1 ms by Numba's ``np.dot``, which calls ``gemv``."""
    arrays = (a, b, c)
    if not all(isinstance(x, types.Array) and x.layout == "C" for x in arrays):
        raise TypingError(f"gemm multiplies C-contiguous arrays, not {arrays}")
    if len({x.dtype for x in arrays}) != 1 or a.dtype not in (types.float32, types.float64):
        raise TypingError(f"gemm multiplies float32 or float64 arrays, not {arrays}")
    for name, group, count in (("offsets", offsets, 3), ("transposed", transposed, 2)):
        if not (isinstance(group, types.UniTuple) and group.count == count):
            raise TypingError(f"gemm's {name} are a tuple of {count} integers, not {group}")
    letter = "s" if a.dtype == types.float32 else "d"
    symbol, vector_symbol = f"numbax_{letter}gemm", f"numbax_{letter}gemv"
    packed = packed_gemm.available()  # on AVX-512

    def codegen(context, builder, signature, values):
        i32, i8 = ir.IntType(32), ir.IntType(8)
        real = context.get_value_type(signature.args[0].dtype)
        starts = cgutils.unpack_tuple(builder, values[3])
        data = [
            builder.gep(context.make_array(t)(context, builder, v).data, [start])
            for t, v, start in zip(signature.args[:3], values[:3], starts, strict=True)
        ]
        m, n, k = (builder.trunc(v, i32) for v in cgutils.unpack_tuple(builder, values[5]))
        i64 = ir.IntType(64)
        rows, columns, depth = (builder.sext(v, i64) for v in (m, n, k))
        multiplies = builder.mul(builder.mul(rows, columns), depth)  # 64 bits: no overflow
        strides = [builder.trunc(v, i32) for v in cgutils.unpack_tuple(builder, values[6])]
        lda, ldb, ldc = (*strides, n)[:3]
        a_t, b_t = cgutils.unpack_tuple(builder, values[4])

        def by_reference(value):  # in the entry block: the call may sit in a loop
            return cgutils.alloca_once_value(builder, value)

        def flag(value):  # 'T' or 'N'
            transposed = builder.icmp_signed("!=", value, ir.Constant(value.type, 0))
            return builder.select(transposed, ir.Constant(i8, ord("T")), ir.Constant(i8, ord("N")))

        pointer = real.as_pointer()
        one, zero = by_reference(ir.Constant(real, 1.0)), by_reference(ir.Constant(real, 0.0))
        a_data, b_data, c_data = (builder.bitcast(d, pointer) for d in data)

        def call(name, arguments):
            function_type = ir.FunctionType(ir.VoidType(), [x.type for x in arguments])
            function = cgutils.get_or_insert_function(builder.module, function_type, name)
            builder.call(function, arguments)

        def pick(transposed, if_transposed, otherwise):
            nonzero = builder.icmp_signed("!=", transposed, ir.Constant(transposed.type, 0))
            return builder.select(nonzero, if_transposed, otherwise)

        def flipped(transposed):
            return builder.xor(
                pick(transposed, ir.Constant(i8, 1), ir.Constant(i8, 0)), ir.Constant(i8, 1)
            )

        def gemv(matrix_t, matrix, ld, size, vector_t, vector, vector_ld, out_inc):
            """y = op(matrix) @ vector: the column-major matrix is ``size`` x depth where
            ``matrix_t``, else depth x ``size`` read transposed; the vector's elements are
            ``vector_ld`` apart unless ``vector_t``, else adjacent."""
            char_t, char_n = ir.Constant(i8, ord("T")), ir.Constant(i8, ord("N"))
            call(
                vector_symbol,
                [
                    by_reference(pick(matrix_t, char_n, char_t)),
                    by_reference(pick(matrix_t, size, k)),
                    by_reference(pick(matrix_t, k, size)),
                    one,
                    matrix,
                    by_reference(ld),
                    vector,
                    by_reference(pick(vector_t, ir.Constant(i32, 1), vector_ld)),
                    zero,
                    c_data,
                    by_reference(out_inc),
                ],
            )

        def blas_call(columns, b_start, c_start):
            # Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T.
            call(
                symbol,
                [
                    by_reference(flag(b_t)),
                    by_reference(flag(a_t)),
                    by_reference(columns),
                    by_reference(m),
                    by_reference(k),
                    one,
                    b_start,
                    by_reference(ldb),
                    a_data,
                    by_reference(lda),
                    zero,
                    c_start,
                    by_reference(ldc),
                ],
            )

        def least(x, y):
            return builder.select(builder.icmp_signed("<", x, y), x, y)

        def ceil_div(x, y):
            return builder.sdiv(builder.add(x, builder.sub(y, ir.Constant(y.type, 1))), y)

        def small_width():
            """The columns per call where the product runs as calls of BLAS's small-matrix
            kernels (``SMALL_ROWS``), else 0: as even as ``SMALL_ALIGN`` allows."""
            constant = lambda value: ir.Constant(i64, value)  # noqa: E731
            at_least = lambda x, value: builder.icmp_signed(">=", x, constant(value))  # noqa: E731
            transposed = builder.icmp_signed("!=", b_t, ir.Constant(b_t.type, 0))
            few = builder.and_(
                builder.icmp_signed("<=", rows, constant(SMALL_ROWS)), at_least(rows, 1)
            )
            # Every division runs, wanted or not: none by zero (a product of no rows,
            # columns or depth).
            one_row = builder.select(few, rows, constant(1))
            one_deep = builder.select(at_least(depth, 1), depth, constant(1))
            widest = builder.sdiv(constant(SMALL_MULTIPLIES), builder.mul(one_row, one_deep))
            cells = builder.sdiv(constant(SMALL_CELLS), one_row)
            widest = builder.select(transposed, least(widest, cells), widest)
            widest = builder.and_(widest, constant(-SMALL_ALIGN))
            over = builder.icmp_signed(">", multiplies, constant(SMALL_MULTIPLIES))
            deep_enough = builder.or_(builder.not_(transposed), at_least(depth, SMALL_DEPTH_T))
            bits = calibration.cell_value(builder, calibration.PRODUCTS_SYMBOL)
            measured = builder.and_(bits, constant(calibration.SMALL_BITS[letter]))
            wanted = builder.and_(builder.and_(few, over), at_least(widest, SMALL_LEAST))
            wanted = builder.and_(wanted, deep_enough)
            wanted = builder.and_(wanted, builder.icmp_signed("!=", measured, constant(0)))
            chunks = ceil_div(columns, builder.select(wanted, widest, constant(1)))
            chunks = builder.select(at_least(chunks, 1), chunks, constant(1))
            even = builder.add(ceil_div(columns, chunks), constant(SMALL_ALIGN - 1))
            even = builder.and_(even, constant(-SMALL_ALIGN))
            return builder.trunc(builder.select(wanted, even, constant(0)), i32)

        def blas():
            """One BLAS call, or calls of column chunks small enough for BLAS's small-matrix
            kernels (``SMALL_ROWS``)."""
            width = small_width()
            in_chunks = builder.icmp_signed(">", width, ir.Constant(i32, 0))
            with builder.if_else(in_chunks) as (chunked, whole):
                with whole:
                    blas_call(n, b_data, c_data)
                with chunked:
                    b_step = pick(b_t, ldb, ir.Constant(i32, 1))
                    with cgutils.for_range(builder, ceil_div(n, width)) as loop:
                        start = builder.mul(loop.index, width)
                        chunk = least(width, builder.sub(n, start))
                        b_start = builder.gep(b_data, [builder.mul(start, b_step)])
                        blas_call(chunk, b_start, builder.gep(c_data, [start]))

        def packed_or_blas():
            """numbax's packed product (``packed_gemm``) where it is worth its packing,
            else BLAS's. (At least ``LEAST_MULTIPLIES`` multiplies: a depth of one or
            more, which the packed product needs.)"""
            wide = [rows, columns, depth, *(builder.sext(v, i64) for v in (lda, ldb, ldc))]
            large = builder.icmp_signed(">=", multiplies, ir.Constant(i64, LEAST_MULTIPLIES))
            # Its tiles are two vectors wide (``packed_gemm.COLUMNS``): fewer columns are
            # mostly padding (a CNN's 8 channels ran 2.1-2.6x OpenBLAS's time); op(b) read
            # transposed is packed, which few rows do not repay (16 x 512 @ (128 x 512)^T:
            # 1.10x).
            wide_enough = builder.icmp_signed(
                ">=", wide[1], ir.Constant(i64, packed_gemm.COLUMNS[letter])
            )
            rows_enough = builder.icmp_signed(">=", wide[0], ir.Constant(i64, PACKED_ROWS_READ_T))
            b_in_place = builder.icmp_signed("==", b_t, ir.Constant(b_t.type, 0))
            large = builder.and_(large, wide_enough)
            large = builder.and_(large, builder.or_(b_in_place, rows_enough))
            # ... where it beat BLAS's on this machine (``calibration.PRODUCTS_CELL``).
            bits = calibration.cell_value(builder, calibration.PRODUCTS_SYMBOL)
            bit = builder.and_(bits, ir.Constant(i64, calibration.PACKED_BITS[letter]))
            large = builder.and_(large, builder.icmp_signed("!=", bit, ir.Constant(i64, 0)))
            step = ir.Constant(i64, 1)
            with builder.if_else(large) as (own, other):
                with own:
                    call(
                        packed_gemm.SYMBOLS[letter],
                        [
                            a_data,
                            b_data,
                            c_data,
                            *wide[:3],
                            pick(a_t, step, wide[3]),  # a row's step in op(a)
                            pick(a_t, wide[3], step),  # a step of the depth in op(a)
                            pick(b_t, step, wide[4]),  # a step of the depth in op(b)
                            pick(b_t, wide[4], step),  # a column's step in op(b)
                            wide[5],
                        ],
                    )
                with other:
                    blas()

        # gemv for one column or one row (with a depth: gemv of none leaves y unset).
        has_depth = builder.icmp_signed(">", k, ir.Constant(i32, 0))
        one_column = builder.and_(builder.icmp_signed("==", n, ir.Constant(i32, 1)), has_depth)
        one_row = builder.and_(builder.icmp_signed("==", m, ir.Constant(i32, 1)), has_depth)
        with builder.if_else(one_column) as (column, other):
            with column:  # c[:, 0] = op(A) @ op(B)[:, 0]: B's column is the vector
                gemv(a_t, a_data, lda, m, b_t, b_data, ldb, ldc)
            with other, builder.if_else(one_row) as (row, general):
                with row:  # c[0] = op(B)^T @ op(A)[0]: A's row is the vector
                    b_rows, a_row = flipped(b_t), flipped(a_t)
                    gemv(b_rows, b_data, ldb, n, a_row, a_data, lda, ir.Constant(i32, 1))
                with general:
                    if packed:
                        packed_or_blas()
                    else:
                        blas()
        return context.get_dummy_value()

    return types.void(a, b, c, offsets, transposed, sizes, leading), codegen


@njit(parallel=True, cache=True, error_model="numpy", no_cfunc_wrapper=True)
def blocked_gemm(a, b, c, offsets, transposed, sizes, leading, split, threads, least):
    """``gemm`` split into blocks, one single-threaded call per block in one ``prange``:
    blocks of ``op(a)``'s rows, of ``op(b)``'s columns, or of the depth (each block's
    product into an array of its own, added into ``c`` in block order), as ``split``
    says. At most ``threads`` blocks of at least ``least`` rows, columns or depth; one
    ``gemm`` call on the calling thread, no thread woken, below the machine's threshold
    (``calibration.parallel_flops``, read at run time) or for one block. The
    arrays are one-dimensional (the product units pass their arrays flattened): one
    compiled function per dtype, kept in Numba's disk cache, which every large product
    unit calls instead of running a parallel loop of its own (a unit with a ``prange``
    took 0.6 s longer to compile)."""
    rows, columns, depth = sizes
    a_transposed, b_transposed = transposed
    a_leading, b_leading = leading
    extent = depth if split == DEPTH else columns if split == COLUMNS else rows
    blocks = max(1, min(threads, extent // max(least, 1)))
    if blocks == 1 or 2 * rows * columns * depth < parallel_flops():
        gemm(a, b, c, offsets, transposed, sizes, leading)
        return
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
