"""numbax's own float32 and float64 matrix products for processors with AVX-512: a packed
GEMM in the manner of BLIS/GotoBLAS, tiles of 12 rows by two vectors (32 float32 or 16
float64 columns) in 24 vector registers (``gemm.gemm`` calls them).

Why numbax has one: the MLP training step spent 70% of its time in OpenBLAS's ``sgemm``,
and OpenBLAS picks its kernels by ``OPENBLAS_CORETYPE`` where the environment sets it, as
this machine's does (Haswell: AVX2). XLA's products ignore the variable and run AVX-512
code, so the same program ran 1.4-2x JAX's time here whatever numbax's fusion did. On one
core of this machine (AMD EPYC, Zen 5; median of 30 calls, single-threaded), OpenBLAS's
Haswell kernels ran 64 x 784 @ 784 x 512 in 541 us and 256 x 784 @ 784 x 512 in 1,885 us;
this product 282 us and 1,103 us (182-214 GFLOP/s over five training-step shapes, near
OpenBLAS's own AVX-512 kernels, 224-240); a 16 x 128 @ 128 x 512 product, 36 against 16 us.
A depth of 384 at a time ran the first 242 us (256: 296 us; 512: 275 us). float64, the
same shapes: 0.53-0.80x OpenBLAS's Haswell ``dgemm`` (64 x 784 @ 784 x 512: 901 -> 482 us).

How: the depth is taken ``KC`` at a time; for each block of the depth, ``MC`` rows of
``op(a)`` at a time are packed into strips of ``MR`` rows, each strip ``kc x MR``
contiguous (the tile broadcasts one element of each row per step); ``op(b)`` is read
where it lies when its rows are contiguous (a row-major ``b``: each step loads two vectors
of a row, 32 columns), and packed in panels of a tile's columns otherwise (``b`` read
transposed, or the last columns short of a panel). The tile (``_tile``, an
intrinsic writing the loop in LLVM IR: 24 accumulators that LLVM keeps in registers, one
``llvm.fma`` per register and step) adds its product into ``c`` for every block of the
depth but the first; a tile at the edge of ``c`` is computed into a scratch tile and its
part copied.

Called from compiled code only (a ``cfunc`` under the symbol ``numbax_sgemm_packed`` or
``numbax_dgemm_packed``, registered when ``gemm`` is imported, so a kernel cached on disk
holds no address; ``compiled``), where it beat BLAS's product on this machine
(``calibration``: not where OpenBLAS runs its own AVX-512 kernels), on one thread: a
large product is split into blocks over the call's threads first (``gemm.blocked_gemm``).
Results equal NumPy's within rounding (a
different order of the depth's sum); tests in ``tests/backends/test_packed_gemm.py``.
"""

from __future__ import annotations

import functools

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir
from numba import cfunc, njit, types
from numba.core import cgutils
from numba.extending import intrinsic

MR = 12  # a tile's rows; its columns are two vectors' lanes (``COLUMNS``)
COLUMNS = {"s": 32, "d": 16}  # float32: 2 x 16 lanes; float64: 2 x 8
KC, MC = 384, 192  # the depth and the rows of ``op(a)`` packed at a time (L1 and L2)
SYMBOLS = {"s": "numbax_sgemm_packed", "d": "numbax_dgemm_packed"}
# The packed product runs where it is worth its packing: a product of fewer multiplies
# goes to BLAS (measured: 37 x 45 @ 45 x 70, 4 us by OpenBLAS, 5 us packed).
LEAST_MULTIPLIES = 1 << 15
# ... of at least one tile's columns, and where ``op(b)`` is read transposed (packed), of
# at least two strips of rows: measured on 27 products of training steps, one thread, in
# ``gemm.gemm``'s choice (0.39-0.88x OpenBLAS's time where taken, 1.1-2.6x where not).
PACKED_ROWS_READ_T = 2 * MR


def _signature(real):
    pointer = types.CPointer(real)
    return types.void(pointer, pointer, pointer, *([types.int64] * 8))


@functools.cache
def available() -> bool:
    """Whether this processor runs the packed products (AVX-512 Foundation)."""
    return "+avx512f" in llvm.get_host_cpu_features().flatten().split(",")


@intrinsic
def _address(typingctx, x):
    """The address of an array's data or of a ``CPointer``, as an integer."""

    def codegen(context, builder, signature, values):
        (ty,), (value,) = signature.args, values
        if isinstance(ty, types.Array):
            value = context.make_array(ty)(context, builder, value).data
        return builder.ptrtoint(value, ir.IntType(64))

    return types.intp(x), codegen


@intrinsic
def _tile(typingctx, like, kc, a, a_row, a_step, b, b_step, c, ldc, accumulate):
    """``c[r * ldc + j] (+)= sum over p < kc of a[r * a_row + p * a_step] * b[p * b_step
    + j]`` for ``r < MR``, ``j`` under the tile's columns, the arrays at addresses ``a``,
    ``b``, ``c`` (``_address``) of ``like``'s dtype (float32 or float64): added where
    ``accumulate`` is nonzero, stored otherwise; ``kc`` at least one."""
    lanes = 512 // like.dtype.bitwidth  # one AVX-512 vector
    suffix = f"v{lanes}f{like.dtype.bitwidth}"

    def codegen(context, builder, signature, values):
        _, kc, a, a_row, a_step, b, b_step, c, ldc, accumulate = values
        i64, i32 = ir.IntType(64), ir.IntType(32)
        real = context.get_value_type(like.dtype)
        vector = ir.VectorType(real, lanes)
        a, b, c = (builder.inttoptr(v, real.as_pointer()) for v in (a, b, c))
        fma = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(vector, [vector] * 3), f"llvm.fma.{suffix}"
        )
        zero = ir.Constant(vector, [0.0] * lanes)
        undefined = ir.Constant(vector, ir.Undefined)
        lanes_zero = ir.Constant(ir.VectorType(i32, lanes), [0] * lanes)
        halves = range(2)

        def vector_at(pointer, offset):
            at = builder.gep(pointer, [offset])
            return builder.bitcast(at, vector.as_pointer())

        entry = builder.block
        loop = builder.append_basic_block("tile.loop")
        done = builder.append_basic_block("tile.done")
        builder.branch(loop)
        builder.position_at_end(loop)
        p = builder.phi(i64)
        p.add_incoming(ir.Constant(i64, 0), entry)
        sums = [[builder.phi(vector) for _ in halves] for _ in range(MR)]
        for phi in (phi for row in sums for phi in row):
            phi.add_incoming(zero, entry)
        b_row = builder.gep(b, [builder.mul(p, b_step)])
        columns = [
            builder.load(vector_at(b_row, ir.Constant(i64, h * lanes)), align=4) for h in halves
        ]
        a_column = builder.gep(a, [builder.mul(p, a_step)])
        updated = []
        for r in range(MR):
            at = builder.gep(a_column, [builder.mul(a_row, ir.Constant(i64, r))])
            lane = builder.insert_element(undefined, builder.load(at), ir.Constant(i32, 0))
            splat = builder.shuffle_vector(lane, undefined, lanes_zero)
            updated.append([builder.call(fma, [splat, columns[h], sums[r][h]]) for h in halves])
        following = builder.add(p, ir.Constant(i64, 1))
        p.add_incoming(following, builder.block)
        for r in range(MR):
            for h in halves:
                sums[r][h].add_incoming(updated[r][h], builder.block)
        builder.cbranch(builder.icmp_signed("<", following, kc), loop, done)
        builder.position_at_end(done)
        add = builder.icmp_signed("!=", accumulate, ir.Constant(accumulate.type, 0))
        for r in range(MR):
            for h in halves:
                offset = builder.add(
                    builder.mul(ldc, ir.Constant(i64, r)), ir.Constant(i64, h * lanes)
                )
                target = vector_at(c, offset)
                added = builder.fadd(builder.load(target, align=4), updated[r][h])
                builder.store(builder.select(add, added, updated[r][h]), target, align=4)
        return context.get_dummy_value()

    arguments = (like, kc, a, a_row, a_step, b, b_step, c, ldc, accumulate)
    return types.void(*arguments), codegen


@njit(cache=True, error_model="numpy", boundscheck=False)
def _pack_rows(a, a_row, a_step, rows, top, depth_at, kb, packed):
    """Rows ``top`` to ``top + rows`` (at most ``MC``) of ``op(a)``, depth ``depth_at`` to
    ``+ kb``, into ``packed`` as strips of ``MR`` rows, each ``kb x MR`` (zero rows past
    the last)."""
    strips = (rows + MR - 1) // MR
    for s in range(strips):
        base = s * kb * MR
        for r in range(MR):
            i = top + s * MR + r
            if i < top + rows:
                start = i * a_row + depth_at * a_step
                for p in range(kb):
                    packed[base + p * MR + r] = a[start + p * a_step]
            else:
                for p in range(kb):
                    packed[base + p * MR + r] = 0.0


@njit(cache=True, error_model="numpy", boundscheck=False)
def _pack_columns(b, b_step, b_column, depth_at, kb, left, width, nr, packed):
    """Columns ``left`` to ``left + width`` (at most ``nr``) of ``op(b)``, depth
    ``depth_at`` to ``+ kb``, into ``packed`` as ``kb x nr`` (zero columns past the last)."""
    for p in range(kb):
        start = (depth_at + p) * b_step + left * b_column
        for j in range(width):
            packed[p * nr + j] = b[start + j * b_column]
        for j in range(width, nr):
            packed[p * nr + j] = 0.0


@njit(cache=True, error_model="numpy", boundscheck=False)
def _gemm(a, b, c, m, n, k, a_row, a_step, b_step, b_column, ldc, packed_a, packed_b, scratch):
    """``c[i * ldc + j] = sum over p of a[i * a_row + p * a_step] * b[p * b_step + j *
    b_column]`` for ``i < m``, ``j < n``, ``p < k`` (``k`` at least one), in tiles of
    ``scratch.size // MR`` columns, with the buffers ``_sgemm`` and ``_dgemm`` allocate."""
    nr, size = scratch.size // MR, scratch.itemsize
    panels = (n + nr - 1) // nr
    direct = b_column == 1  # op(b)'s rows are contiguous: its full panels are read in place
    a_packed, b_packed = _address(packed_a), _address(packed_b)
    b_at, c_at, scratch_at = _address(b), _address(c), _address(scratch)
    for depth_at in range(0, k, KC):
        kb = min(KC, k - depth_at)
        later = 1 if depth_at > 0 else 0
        for panel in range(panels):
            left = panel * nr
            width = min(nr, n - left)
            if not (direct and width == nr):
                at = 0 if direct else panel * kb * nr
                _pack_columns(b, b_step, b_column, depth_at, kb, left, width, nr, packed_b[at:])
        for top in range(0, m, MC):
            rows = min(MC, m - top)
            _pack_rows(a, a_row, a_step, rows, top, depth_at, kb, packed_a)
            for panel in range(panels):
                left = panel * nr
                width = min(nr, n - left)
                panel_at, step = b_at + size * (depth_at * b_step + left), b_step
                if not (direct and width == nr):
                    panel_at, step = b_packed + size * (0 if direct else panel * kb * nr), nr
                for s in range((rows + MR - 1) // MR):
                    i = top + s * MR
                    height = min(MR, m - i)
                    strip_at = a_packed + size * s * kb * MR
                    if height == MR and width == nr:
                        target_at = c_at + size * (i * ldc + left)
                        _tile(scratch, kb, strip_at, 1, MR, panel_at, step, target_at, ldc, later)
                        continue
                    _tile(scratch, kb, strip_at, 1, MR, panel_at, step, scratch_at, nr, 0)
                    for r in range(height):
                        for j in range(width):
                            value = scratch[r * nr + j]
                            if later:
                                value += c[(i + r) * ldc + left + j]
                            c[(i + r) * ldc + left + j] = value


def _sgemm(a, b, c, m, n, k, a_row, a_step, b_step, b_column, ldc):
    """``_gemm`` of float32 arrays, in tiles of 32 columns."""
    panels = 1 if b_column == 1 else (n + 31) // 32  # op(b) packed: the last panel, or all
    packed_b = np.empty(KC * 32 * panels, np.float32)
    packed_a, scratch = np.empty(MC * KC, np.float32), np.empty(MR * 32, np.float32)
    _gemm(a, b, c, m, n, k, a_row, a_step, b_step, b_column, ldc, packed_a, packed_b, scratch)


def _dgemm(a, b, c, m, n, k, a_row, a_step, b_step, b_column, ldc):
    """``_gemm`` of float64 arrays, in tiles of 16 columns."""
    panels = 1 if b_column == 1 else (n + 15) // 16
    packed_b = np.empty(KC * 16 * panels, np.float64)
    packed_a, scratch = np.empty(MC * KC, np.float64), np.empty(MR * 16, np.float64)
    _gemm(a, b, c, m, n, k, a_row, a_step, b_step, b_column, ldc, packed_a, packed_b, scratch)


@functools.cache
def compiled() -> dict:
    """The packed products as C functions by letter (``s``, ``d``; compiled once per
    installation, then loaded from Numba's cache), each registered under its symbol
    (``SYMBOLS``); ``gemm`` calls this as it is imported, on processors that run them
    (``available``)."""
    functions = {}
    for letter, python, real in (("s", _sgemm, types.float32), ("d", _dgemm, types.float64)):
        options = {"cache": True, "error_model": "numpy", "boundscheck": False}
        functions[letter] = cfunc(_signature(real), **options)(python)
        llvm.add_symbol(SYMBOLS[letter], functions[letter].address)
    return functions
