"""A product kernel's BLAS call: ``sgemm``/``dgemm`` straight from SciPy's BLAS (``units``).

Imported by generated product kernels only (as ``nbx_gemm``). Numba's ``np.dot`` types
and lowers its checks, copies and dispatch for every call site, which made a product
kernel cost 0.2 s to compile; a product kernel knows its shapes, layouts and which
operand BLAS reads transposed, so it calls ``gemm`` itself: an intrinsic that passes
the arrays' data pointers and the sizes, by reference as Fortran wants. The functions
are linked under symbols of their own (``numbax_sgemm``, ``numbax_dgemm``) as
``blas.py`` and ``lapack.py`` link theirs, so a kernel cached on disk holds no address.
"""

from __future__ import annotations

import llvmlite.binding as llvm
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.errors import TypingError
from numba.extending import get_cython_function_address, intrinsic

for _name in ("sgemm", "dgemm"):
    llvm.add_symbol(
        f"numbax_{_name}", get_cython_function_address("scipy.linalg.cython_blas", _name)
    )


@intrinsic
def gemm(typingctx, a, b, c, a_transposed, b_transposed, rows, columns, depth):
    """``c = op(a) @ op(b)`` for C-contiguous row-major matrices: ``op(a)`` is ``rows`` x
    ``depth``, stored transposed (``depth`` x ``rows``) where ``a_transposed``; ``op(b)``
    is ``depth`` x ``columns``, likewise; ``c`` is ``rows`` x ``columns``. Only the data
    pointers of the arrays are read (any rank: the kernel passes a batch's matrix)."""
    arrays = (a, b, c)
    if not all(isinstance(x, types.Array) and x.layout == "C" for x in arrays):
        raise TypingError(f"gemm multiplies C-contiguous arrays, not {arrays}")
    if len({x.dtype for x in arrays}) != 1 or a.dtype not in (types.float32, types.float64):
        raise TypingError(f"gemm multiplies float32 or float64 arrays, not {arrays}")
    symbol = "numbax_sgemm" if a.dtype == types.float32 else "numbax_dgemm"

    def codegen(context, builder, signature, values):
        i32, i8 = ir.IntType(32), ir.IntType(8)
        real = context.get_value_type(signature.args[0].dtype)
        data = [
            context.make_array(t)(context, builder, v).data
            for t, v in zip(signature.args[:3], values[:3], strict=True)
        ]
        m, n, k = (builder.trunc(v, i32) for v in values[5:8])

        def by_reference(value):  # in the entry block: the call may sit in a loop
            return cgutils.alloca_once_value(builder, value)

        def flag(value):  # 'T' or 'N'
            transposed = builder.icmp_signed("!=", value, ir.Constant(value.type, 0))
            return builder.select(transposed, ir.Constant(i8, ord("T")), ir.Constant(i8, ord("N")))

        # Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T.
        a_t, b_t = values[3], values[4]
        zero = ir.Constant(a_t.type, 0)
        lda = builder.select(builder.icmp_signed("!=", a_t, zero), m, k)
        zero = ir.Constant(b_t.type, 0)
        ldb = builder.select(builder.icmp_signed("!=", b_t, zero), k, n)
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
            by_reference(n),
        ]
        function_type = ir.FunctionType(ir.VoidType(), [x.type for x in arguments])
        function = cgutils.get_or_insert_function(builder.module, function_type, symbol)
        builder.call(function, arguments)
        return context.get_dummy_value()

    return types.void(a, b, c, a_transposed, b_transposed, rows, columns, depth), codegen
