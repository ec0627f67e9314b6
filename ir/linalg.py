"""Dense linear algebra: the factorizations that no composition of the other primitives
computes efficiently, as ``jax.lax.linalg``.

Every one takes a stack of matrices ``(..., m, n)`` and factorizes each matrix of the
stack, so batching only moves the batch dimension to the front. They are total
functions, as JAX's are, so one bad matrix of a stack never stops the program:

- ``cholesky``: the lower factor of the lower triangle (the upper one is not read); a
  matrix that is not positive definite gives NaNs.
- ``triangular_solve(a, b)``: ``op(a) x = b`` with ``op`` the identity or the transpose,
  ``a`` read as its lower or upper triangle, with ones on the diagonal when
  ``unit_diagonal``; a zero on the diagonal gives infinities and NaNs.
- ``lu``: ``P a = L U`` by partial pivoting (LAPACK's ``getrf``): the packed factors,
  the row swaps (``pivots``) and the permutation they make; a singular matrix gets a
  zero on U's diagonal and no error.
- ``qr``: Householder QR, reduced or complete, signs as LAPACK's.
- ``eigh``: eigenvalues (ascending) and eigenvectors of the symmetric matrix the lower
  triangle makes.
- ``svd``: singular values (descending) and, with ``compute_uv``, ``u`` and ``vt``.

The references are NumPy's ``numpy.linalg`` where it is total, and loops vectorised over
the stack where it is not (NumPy has no LU or triangular solve, and raises where these
give NaNs).
"""

from __future__ import annotations

import numpy as np

from . import dtypes
from .core import ShapedArray
from .primitive import Pattern, check, register

INDEX_DTYPE = dtypes.int32


def _matrices(name: str, *avals: ShapedArray, square: bool = False) -> None:
    for aval in avals:
        check(aval.ndim >= 2, name, f"needs a stack of matrices, got shape {aval.shape}")
        check(aval.dtype in (dtypes.float32, dtypes.float64), name, f"got {aval.dtype}")
        if square:
            check(aval.shape[-1] == aval.shape[-2], name, f"{aval.shape} is not square")


def _batch_of(aval: ShapedArray) -> tuple[int, ...]:
    return aval.shape[:-2]


# --- cholesky --------------------------------------------------------------------------------


def _cholesky_rule(a):
    _matrices("cholesky", a, square=True)
    return a


def _cholesky(a):
    try:
        return np.linalg.cholesky(a)
    except np.linalg.LinAlgError:  # one matrix at a time: only the failing ones are NaN
        out = np.empty_like(a)
        for index in np.ndindex(a.shape[:-2]):
            try:
                out[index] = np.linalg.cholesky(a[index])
            except np.linalg.LinAlgError:
                out[index] = np.nan
        return out


cholesky_p = register("cholesky", Pattern.OPAQUE, _cholesky_rule, _cholesky, expensive=True)


# --- triangular_solve ------------------------------------------------------------------------


def _triangular_solve_rule(a, b, *, lower, transpose_a, unit_diagonal):
    _matrices("triangular_solve", a, square=True)
    _matrices("triangular_solve", b)
    check(a.dtype == b.dtype, "triangular_solve", f"dtypes differ: {a.dtype}, {b.dtype}")
    check(_batch_of(a) == _batch_of(b), "triangular_solve", "batch dimensions differ")
    check(a.shape[-1] == b.shape[-2], "triangular_solve", f"{a.shape} cannot solve {b.shape}")
    for flag in (lower, transpose_a, unit_diagonal):
        check(isinstance(flag, bool), "triangular_solve", "flags must be bools")
    return b


def _triangular_solve(a, b, *, lower, transpose_a, unit_diagonal):
    if transpose_a:  # the transpose of a lower triangle is an upper one
        a, lower = np.swapaxes(a, -1, -2), not lower
    n = a.shape[-1]
    x = np.array(b, copy=True)
    with np.errstate(all="ignore"):
        for i in range(n) if lower else range(n - 1, -1, -1):
            done = slice(0, i) if lower else slice(i + 1, n)
            x[..., i, :] -= (a[..., i : i + 1, done] @ x[..., done, :])[..., 0, :]
            if not unit_diagonal:
                x[..., i, :] /= a[..., i, i][..., None]
    return x


triangular_solve_p = register(
    "triangular_solve", Pattern.OPAQUE, _triangular_solve_rule, _triangular_solve, expensive=True
)


# --- lu --------------------------------------------------------------------------------------


def _lu_rule(a):
    _matrices("lu", a, square=True)
    rows = ShapedArray(a.shape[:-1], INDEX_DTYPE)
    return [a, rows, rows]


def _lu(a):
    """Right-looking LU with partial pivoting, over the whole stack at once (``getf2``)."""
    lu = np.array(a, copy=True)
    n = a.shape[-1]
    pivots = np.zeros(a.shape[:-1], INDEX_DTYPE)
    permutation = np.broadcast_to(np.arange(n, dtype=INDEX_DTYPE), pivots.shape).copy()
    with np.errstate(all="ignore"):
        for k in range(n):
            p = (k + np.argmax(np.abs(lu[..., k:, k]), axis=-1)).astype(INDEX_DTYPE)
            pivots[..., k] = p
            order = np.broadcast_to(np.arange(n), pivots.shape).copy()
            np.put_along_axis(order, p[..., None], k, axis=-1)
            order[..., k] = p
            lu = np.take_along_axis(lu, order[..., None], axis=-2)
            permutation = np.take_along_axis(permutation, order, axis=-1)
            pivot = lu[..., k : k + 1, k]
            column = lu[..., k + 1 :, k]
            # A zero pivot leaves its (zero) column unscaled, as LAPACK does.
            lu[..., k + 1 :, k] = np.where(pivot != 0, column / pivot, column)
            lu[..., k + 1 :, k + 1 :] -= lu[..., k + 1 :, k : k + 1] * lu[..., k : k + 1, k + 1 :]
    return [lu, pivots, permutation]


lu_p = register("lu", Pattern.OPAQUE, _lu_rule, _lu, multiple_results=True, expensive=True)


# --- qr --------------------------------------------------------------------------------------


def _qr_rule(a, *, full_matrices):
    _matrices("qr", a)
    check(isinstance(full_matrices, bool), "qr", "full_matrices must be a bool")
    *batch, m, n = a.shape
    k = m if full_matrices else min(m, n)
    return [a.update(shape=(*batch, m, k)), a.update(shape=(*batch, k, n))]


def _qr(a, *, full_matrices):
    q, r = np.linalg.qr(a, mode="complete" if full_matrices else "reduced")
    return [q, r]


qr_p = register("qr", Pattern.OPAQUE, _qr_rule, _qr, multiple_results=True, expensive=True)


# --- eigh ------------------------------------------------------------------------------------


def _eigh_rule(a):
    _matrices("eigh", a, square=True)
    return [a.update(shape=a.shape[:-1]), a]


def _eigh(a):
    w, v = np.linalg.eigh(a, UPLO="L")
    return [w, v]


eigh_p = register("eigh", Pattern.OPAQUE, _eigh_rule, _eigh, multiple_results=True, expensive=True)


# --- svd -------------------------------------------------------------------------------------


def _svd_rule(a, *, full_matrices, compute_uv):
    _matrices("svd", a)
    check(isinstance(full_matrices, bool), "svd", "full_matrices must be a bool")
    check(isinstance(compute_uv, bool), "svd", "compute_uv must be a bool")
    *batch, m, n = a.shape
    k = min(m, n)
    s = a.update(shape=(*batch, k))
    if not compute_uv:
        return [s]
    u_columns, vt_rows = (m, n) if full_matrices else (k, k)
    return [a.update(shape=(*batch, m, u_columns)), s, a.update(shape=(*batch, vt_rows, n))]


def _svd(a, *, full_matrices, compute_uv):
    if not compute_uv:
        return [np.linalg.svd(a, compute_uv=False)]
    u, s, vt = np.linalg.svd(a, full_matrices=full_matrices)
    return [u, s, vt]


svd_p = register("svd", Pattern.OPAQUE, _svd_rule, _svd, multiple_results=True, expensive=True)
