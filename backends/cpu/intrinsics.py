"""Scalar operations the generated code needs with exact IR semantics, as LLVM instructions.

Numba's own operators follow Python: ``//`` floors, ``%`` takes the divisor's sign, ``max``
of floats ignores NaN. The IR follows C and NumPy instead: ``div`` on ints truncates
toward zero, ``rem`` is C's ``fmod``, float ``max``/``min`` propagate NaN. Each function
here emits the one LLVM instruction that means exactly that, so loops stay branch-free
and vectorise:

- ``add_reassoc``/``mul_reassoc``: a float add/multiply that LLVM may reassociate. Used
  only for reduction accumulators: it is what lets the loop vectoriser split a sum into
  SIMD lanes (the result changes within rounding, as NumPy's pairwise sum does). It
  carries ``reassoc`` and no other fast-math flag (see ``_REASSOC``).
- ``maximum``/``minimum``: ``llvm.maximum``/``llvm.minimum`` (NaN-propagating, as
  ``np.maximum``), vectorisable as elementwise ops and as reductions.
- ``div_trunc``/``rem_trunc``: ``sdiv``/``srem`` guarded against division by zero (result
  0, as NumPy) and ``INT_MIN / -1`` (wraps, as NumPy), both undefined in LLVM;
  ``udiv``/``urem`` for unsigned integers.
- ``fmod``: ``frem``, C's fmod.
- ``select``: ``on_true if predicate else on_false`` without a branch, so it vectorises
  (and Numba's front end, which gives every branch its own blocks, has less to do).
- ``compensated_add``/``compensated_total``: Neumaier summation of the block sums of a
  float64 sum (see ``reductions``).
- ``shaped_view``: ``array.reshape(shape)`` for a C-contiguous array, built from the array's own
  data pointer in LLVM IR. Numba's reshape computes the view's strides in a C helper
  (``numba_attempt_nocopy_reshape``) that LLVM cannot see into, and a kernel loop
  storing into or reading through such views did not vectorise ("cannot identify array
  bounds"): every loop of a multi-kernel program over 2-D values, none of them so.
- ``opaque_int``: its argument, through an empty inline ``asm`` that LLVM cannot see
  into: a short loop's constant trip count that must stay a loop (``loopnest``).
- ``prefetch_span``: ``llvm.prefetch`` of a span of a C-contiguous array, one cache line
  at a time (a hint: no fault, no effect on results). A row reduction that reads each row
  several times prefetches the row it reaches next while it works on this one
  (``reductions``).
- ``complex_div``: NumPy's complex division (Smith's algorithm, and a zero divisor gives
  inf and NaN parts), where Numba's raises ZeroDivisionError; ``complex_pow``: NumPy's
  complex power, where Numba's polar form gives NaN for infinite exponents. Both are
  ``backends/complex_functions.py``'s, which the cuda backend compiles too.
- ``threefry2x32_word0``/``_word1``/``_xor``/``_bits64``: the ``threefry2x32``
  primitive's outputs, ``backends/threefry.py``'s helpers (``cpu/threefry.py``).
"""

from __future__ import annotations

import math
import sys

from llvmlite import ir
from numba import njit, types
from numba.core import cgutils, ir_utils
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic, overload
from numba.np.arrayobj import make_array, populate_array

from ..complex_functions import complex_functions
from .threefry import (  # noqa: F401 - generated code calls them as intrinsics
    threefry2x32_bits64,
    threefry2x32_word0,
    threefry2x32_word1,
    threefry2x32_xor,
)

# The only fast-math flag numbax's generated code carries, anywhere (every other float
# instruction, CPU and CUDA, is strict IEEE). ``reassoc`` alone is what the loop
# vectoriser needs to split an accumulation into SIMD lanes. The others are left out on
# purpose:
# - ``nnan``/``ninf``/``fast``: would let LLVM assume NaN and inf never occur.
# - ``nsz``: together with ``reassoc`` it licenses InstCombine to re-express the whole
#   add/sub tree under the accumulation, the accumulated value's operands included,
#   although they carry no flags: ``acc + (x - x)`` becomes ``acc``, and a sum of
#   ``x - x`` over [nan, inf] returned 0.0 where NumPy returns nan. It also lets the
#   vectoriser start lanes at +0.0 instead of -0.0, which changes signs of zeros.
# - ``contract``: fusing a multiply into the add (fma) drops the NaN of a product that
#   overflows to inf and then meets -inf; vectorising needs no fusion.
# - ``afn``/``arcp``: approximate functions and reciprocals change results beyond
#   reassociation.
_REASSOC = ("reassoc",)


def _same_float(a, b) -> bool:
    return isinstance(a, types.Float) and a == b


def _same_int(a, b) -> bool:
    return isinstance(a, types.Integer) and a == b


@intrinsic
def add_reassoc(typingctx, a, b):
    if not _same_float(a, b):
        return None

    def codegen(context, builder, signature, args):
        return builder.fadd(args[0], args[1], flags=_REASSOC)

    return a(a, b), codegen


@intrinsic
def mul_reassoc(typingctx, a, b):
    if not _same_float(a, b):
        return None

    def codegen(context, builder, signature, args):
        return builder.fmul(args[0], args[1], flags=_REASSOC)

    return a(a, b), codegen


def _float_intrinsic(llvm_name: str):
    def typer(typingctx, a, b):
        if not _same_float(a, b):
            return None

        def codegen(context, builder, signature, args):
            float_type = args[0].type
            fn = builder.module.declare_intrinsic(
                llvm_name, [float_type], ir.FunctionType(float_type, [float_type, float_type])
            )
            return builder.call(fn, args)

        return a(a, b), codegen

    return intrinsic(typer)


maximum = _float_intrinsic("llvm.maximum")
minimum = _float_intrinsic("llvm.minimum")


@intrinsic
def select(typingctx, predicate, on_true, on_false):
    """``on_true if predicate else on_false`` as one ``select``: no branch in the loop."""
    if not isinstance(predicate, types.Boolean) or on_true != on_false:
        return None

    def codegen(context, builder, signature, args):
        return builder.select(args[0], args[1], args[2])

    return on_true(predicate, on_true, on_false), codegen


@intrinsic
def fmod(typingctx, a, b):
    if not _same_float(a, b):
        return None

    def codegen(context, builder, signature, args):
        return builder.frem(args[0], args[1])

    return a(a, b), codegen


def _guarded_integer_division(instruction: str):
    """``a op b`` for ``sdiv``/``srem``, with b == 0 giving 0 and b == -1 giving -a or 0."""

    def typer(typingctx, a, b):
        if not _same_int(a, b):
            return None

        def codegen(context, builder, signature, args):
            a, b = args
            zero, one = ir.Constant(a.type, 0), ir.Constant(a.type, 1)
            if not signature.args[0].signed:  # udiv/urem: only a zero divisor is special
                is_zero = builder.icmp_unsigned("==", b, zero)
                unsigned = "udiv" if instruction == "sdiv" else "urem"
                quotient = getattr(builder, unsigned)(a, builder.select(is_zero, one, b))
                return builder.select(is_zero, zero, quotient)
            minus_one = ir.Constant(a.type, -1)
            is_zero = builder.icmp_signed("==", b, zero)
            is_minus_one = builder.icmp_signed("==", b, minus_one)
            safe_b = builder.select(builder.or_(is_zero, is_minus_one), one, b)
            quotient = getattr(builder, instruction)(a, safe_b)
            if instruction == "sdiv":
                special = builder.select(is_zero, zero, builder.sub(zero, a))
            else:
                special = zero
            return builder.select(builder.or_(is_zero, is_minus_one), special, quotient)

        return a(a, b), codegen

    return intrinsic(typer)


div_trunc = _guarded_integer_division("sdiv")
rem_trunc = _guarded_integer_division("srem")


# madvise(MADV_HUGEPAGE): back a large array by 2 MiB pages. A fresh 64 MiB output
# otherwise takes 16384 page faults on first touch, which cost more than computing it.
# NumPy does the same for its own arrays of 4 MiB and more.
HUGE_PAGES_FROM_BYTES = 1 << 22
_MADV_HUGEPAGE = 14


@intrinsic
def advise_huge_pages(typingctx, array):
    """Ask Linux to back ``array``'s memory with huge pages (a hint: errors are ignored)."""
    if not isinstance(array, types.Array):
        return None

    def codegen(context, builder, signature, args):
        if sys.platform == "linux":
            view = context.make_array(signature.args[0])(context, builder, args[0])
            size_t = context.get_value_type(types.uintp)
            int_t = ir.IntType(32)
            madvise = cgutils.get_or_insert_function(
                builder.module,
                ir.FunctionType(int_t, [cgutils.voidptr_t, size_t, int_t]),
                "madvise",
            )
            # madvise wants a page-aligned start: round the data pointer down to 4 KiB.
            address = builder.ptrtoint(view.data, size_t)
            start = builder.and_(address, ir.Constant(size_t, -4096))
            nbytes = builder.mul(view.nitems, view.itemsize)
            length = builder.add(builder.sub(address, start), nbytes)
            pointer = builder.inttoptr(start, cgutils.voidptr_t)
            builder.call(madvise, [pointer, length, ir.Constant(int_t, _MADV_HUGEPAGE)])
        return context.get_dummy_value()

    return types.none(array), codegen


def shaped_view(array, shape):
    """``array`` with ``shape`` (same size), a view; see the module doc."""
    return array.reshape(shape)


@overload(shaped_view)
def _shaped_view(array, shape):
    contiguous = isinstance(array, types.Array) and array.layout == "C"
    if contiguous and isinstance(shape, types.UniTuple) and isinstance(shape.dtype, types.Integer):
        return lambda array, shape: _contiguous_view(array, shape)
    return lambda array, shape: array.reshape(shape)  # any other layout: Numba's


def _aliases_its_array(lhs: str, args, alias_map, arg_aliases) -> None:
    """Tell Numba's alias analysis that a ``shaped_view`` is its array: the parfor passes
    would otherwise take the view for a new array, and drop loops that store into it."""
    ir_utils._add_alias(lhs, args[0].name, alias_map, arg_aliases)


ir_utils.alias_func_extensions[("shaped_view", __name__)] = _aliases_its_array


@intrinsic
def _contiguous_view(typingctx, array, shape):
    """The C-contiguous view of ``array``'s data with ``shape`` (the generated code
    passes only shapes of ``array``'s size: no check)."""
    ndim = shape.count
    result = array.copy(ndim=ndim, layout="C")

    def codegen(context, builder, signature, args):
        source = make_array(signature.args[0])(context, builder, args[0])
        extents = [
            context.cast(builder, extent, shape.dtype, types.intp)
            for extent in cgutils.unpack_tuple(builder, args[1], ndim)
        ]
        strides, stride = [], source.itemsize
        for extent in reversed(extents):
            strides.insert(0, stride)
            stride = builder.mul(stride, extent)
        out = make_array(result)(context, builder)
        populate_array(
            out,
            data=source.data,
            shape=extents,
            strides=strides,
            itemsize=source.itemsize,
            meminfo=source.meminfo,
            parent=source.parent,
        )
        return impl_ret_borrowed(context, builder, result, out._getvalue())

    return result(array, shape), codegen


@intrinsic
def opaque_int(typingctx, value):
    """``value``, which LLVM can no longer treat as a constant (see ``loopnest``)."""
    if not isinstance(value, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        value = context.cast(builder, args[0], signature.args[0], types.intp)
        barrier = ir.InlineAsm(ir.FunctionType(value.type, [value.type]), "", "=r,0")
        return builder.call(barrier, [value])

    return types.intp(value), codegen


@intrinsic
def _prefetch_element(typingctx, array, index):
    """Prefetch the cache line of ``array.flat[index]`` for reading, into every level (a
    no-op for an array that is not C-contiguous, whose flat index is not an offset)."""
    if not isinstance(array, types.Array) or not isinstance(index, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        if signature.args[0].layout == "C":
            view = context.make_array(signature.args[0])(context, builder, args[0])
            offset = context.cast(builder, args[1], signature.args[1], types.intp)
            address = builder.bitcast(builder.gep(view.data, [offset]), cgutils.voidptr_t)
            int_t = ir.IntType(32)
            prefetch = builder.module.declare_intrinsic(
                "llvm.prefetch",
                [cgutils.voidptr_t],
                ir.FunctionType(ir.VoidType(), [cgutils.voidptr_t, int_t, int_t, int_t]),
            )
            # read (0), keep in all cache levels (3), data cache (1)
            builder.call(prefetch, [address] + [ir.Constant(int_t, k) for k in (0, 3, 1)])
        return context.get_dummy_value()

    return types.none(array, index), codegen


CACHE_LINE_BYTES = 64


@njit(error_model="numpy", no_cfunc_wrapper=True, cache=True)
def prefetch_span(array, start, count):
    """Prefetch ``array.flat[start:start + count]``, clipped to the array."""
    step = max(1, CACHE_LINE_BYTES // array.itemsize)
    for index in range(max(start, 0), min(start + count, array.size), step):
        _prefetch_element(array, index)


@njit(error_model="numpy", no_cfunc_wrapper=True, cache=True)
def compensated_add(total, compensation, value):
    """Neumaier's step: ``total + value``, and the rounding error it lost added to
    ``compensation``. Strict IEEE (no reassoc), or LLVM would fold the error to 0."""
    new_total = total + value
    if abs(total) >= abs(value):
        lost = (total - new_total) + value
    else:
        lost = (value - new_total) + total
    return new_total, compensation + lost


@njit(error_model="numpy", no_cfunc_wrapper=True, cache=True)
def compensated_total(total, compensation):
    """The compensated sum; a NaN or inf total as it is (its compensation is NaN)."""
    if total - total == 0:
        return total + compensation
    return total


@njit(error_model="numpy", no_cfunc_wrapper=True, cache=True)
def integer_pow(x, y, one):
    """x ** y for an integer y >= 0 by repeated squaring; ``one`` is 1 in x's type."""
    result = one
    base = x
    while y > 0:
        if y & 1:
            result = result * base
        base = base * base
        y >>= 1
    return result


def _lazily_compiled(signature):
    """``complex_functions``' ``compile``: an njit function, compiled for the types it is
    called with (they convert to complex128 first). Not cached on disk: Numba's cache key
    of a closure pickles the functions it calls, which differ in every process (a program
    calling them is cached with their code in it)."""
    return njit(error_model="numpy", no_cfunc_wrapper=True)


complex_div, complex_pow = complex_functions(_lazily_compiled, math)
