"""LAPACK's LU and Cholesky and BLAS's triangular solve for the compiled program, called
directly: Numba's ``np.linalg`` has no LU or triangular solve, and its ``cholesky`` copies
the matrix twice more (to Fortran order, then into the stack).

The routines are SciPy's (``scipy.linalg.cython_lapack`` / ``cython_blas``, the LAPACK
Numba's own ``np.linalg`` calls). Each is linked under a symbol of its own name
(``numbax_dgetrf``): the compiled code calls it by name, not by address, so a program
loaded from Numba's disk cache in a new process links to this process's SciPy. The
generated program imports this module only when it factorizes, so ``import numbax``
does not pay for importing ``scipy.linalg``.

LAPACK reads matrices in column-major order and the program's arrays are row-major:
``getrf`` factorizes a transposed copy (its pivoting is by rows of the matrix it sees),
while ``trsm`` solves the row-major system in place as its transpose, ``x op(a)ᵀ = bᵀ``
from the right, which needs no copy at all.
"""

from __future__ import annotations

import llvmlite.binding as llvm
import numpy as np
from numba import njit, types
from numba.extending import get_cython_function_address

_JIT = {"error_model": "numpy", "no_cfunc_wrapper": True, "cache": True}


def _routine(library: str, name: str, n_arguments: int) -> types.ExternalFunction:
    """SciPy's Fortran routine ``name``: every argument is a pointer, as in Fortran."""
    symbol = f"numbax_{name}"
    address = get_cython_function_address(f"scipy.linalg.cython_{library}", name)
    llvm.add_symbol(symbol, address)
    return types.ExternalFunction(symbol, types.void(*[types.voidptr] * n_arguments))


# getrf(m, n, a, lda, ipiv, info); potrf(uplo, n, a, lda, info);
# trsm(side, uplo, transa, diag, m, n, alpha, a, lda, b, ldb)
sgetrf, dgetrf = _routine("lapack", "sgetrf", 6), _routine("lapack", "dgetrf", 6)
spotrf, dpotrf = _routine("lapack", "spotrf", 5), _routine("lapack", "dpotrf", 5)
strsm, dtrsm = _routine("blas", "strsm", 11), _routine("blas", "dtrsm", 11)


@njit(**_JIT)
def _integer(value):
    """A Fortran integer argument: a pointer to an ``int``."""
    return np.full(1, value, np.int32)


@njit(**_JIT)
def _character(letter):
    return np.full(1, ord(letter), np.uint8)


@njit(**_JIT)
def lu(a, packed, pivots, permutation):
    """``getrf`` on each matrix of the stack: LAPACK's blocked partial pivoting."""
    n = a.shape[1]
    size, leading, info = _integer(n), _integer(max(n, 1)), _integer(0)
    column_major = np.empty((n, n), a.dtype)  # column_major[j, i] is a[p, i, j]
    swaps = np.zeros(n, np.int32)
    for p in range(a.shape[0]):
        column_major[:] = a[p].T
        if n > 0:
            # A singular matrix sets info > 0 and leaves a zero on U's diagonal, as the IR says.
            arguments = (size.ctypes, size.ctypes, column_major.ctypes, leading.ctypes)
            if a.itemsize == 8:
                dgetrf(*arguments, swaps.ctypes, info.ctypes)
            else:
                sgetrf(*arguments, swaps.ctypes, info.ctypes)
        packed[p] = column_major.T
        for i in range(n):
            permutation[p, i] = i
        for k in range(n):  # LAPACK's swaps count from 1
            row = swaps[k] - 1
            pivots[p, k] = row
            permutation[p, k], permutation[p, row] = permutation[p, row], permutation[p, k]


@njit(**_JIT)
def cholesky(a, out):
    """``potrf`` on each matrix of the stack, in place in ``out``: a matrix that is not
    positive definite (info > 0) becomes NaN, as the IR says.

    Read column-major, the lower triangle of ``a`` is the upper one of ``aᵀ``, whose upper
    factor ``U`` (``aᵀ = Uᵀ U``, the same matrix) is ``Lᵀ``: no transpose is copied.
    """
    n = a.shape[1]
    if n == 0:
        return
    uplo, size, info = _character("U"), _integer(n), _integer(0)
    for p in range(a.shape[0]):
        factor = out[p]
        factor[:] = a[p]
        if a.itemsize == 8:
            dpotrf(uplo.ctypes, size.ctypes, factor.ctypes, size.ctypes, info.ctypes)
        else:
            spotrf(uplo.ctypes, size.ctypes, factor.ctypes, size.ctypes, info.ctypes)
        if info[0] != 0:
            factor[:] = np.nan
            continue
        for i in range(n):  # the upper triangle still holds a's
            for j in range(i + 1, n):
                factor[i, j] = 0.0


@njit(**_JIT)
def triangular_solve(a, b, x, lower, transpose_a, unit_diagonal):
    """``trsm`` on each system of the stack: ``x = op(a)⁻¹ b``, written over ``x``.

    Read column-major, ``x`` is ``xᵀ`` and ``a`` is ``aᵀ``, whose lower triangle is
    ``a``'s upper one; ``op(a) x = b`` is ``xᵀ op(a)ᵀ = bᵀ``, a solve from the right.
    """
    n, k = b.shape[1], b.shape[2]
    x[:] = b
    if n == 0 or k == 0:
        return
    side, uplo = _character("R"), _character("U" if lower else "L")
    transa = _character("T" if transpose_a else "N")
    diag = _character("U" if unit_diagonal else "N")
    rows, columns = _integer(k), _integer(n)
    one = np.ones(1, a.dtype)
    for p in range(a.shape[0]):
        matrix, solution = a[p], x[p]
        arguments = (side.ctypes, uplo.ctypes, transa.ctypes, diag.ctypes, rows.ctypes)
        if a.itemsize == 8:
            dtrsm(
                *arguments,
                columns.ctypes,
                one.ctypes,
                matrix.ctypes,
                columns.ctypes,
                solution.ctypes,
                rows.ctypes,
            )
        else:
            strsm(
                *arguments,
                columns.ctypes,
                one.ctypes,
                matrix.ctypes,
                columns.ctypes,
                solution.ctypes,
                rows.ctypes,
            )
