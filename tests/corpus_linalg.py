"""Corpus cases for NumPy coverage: ``numpy.linalg`` and SciPy's triangular solves
(registered into ``corpus.CASES``).

The matrices are made well conditioned inside each program (a multiple of the identity
added, or ``a @ a.T`` for positive definite ones), the same in numbax and in the NumPy
oracle, so that float32 results are comparable at a fixed tolerance; tests/tracer/
test_linalg.py checks ill-conditioned ones at a tolerance scaled by the condition
number. Eigenvalues and singular values of random matrices are distinct, so the
eigenvector and singular-vector derivatives are finite.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
from corpus import case, dual_case, f32, f64, i32

import numbax

DECOMPOSITION = 1000.0  # a factorization's rounding: LAPACK's blocked order vs a loop


def _shifted(a):
    """``a`` plus enough of the identity to be diagonally dominant."""
    n = a.shape[-1]
    return a + 3.0 * n * np.eye(n, dtype=a.dtype)


def sign_fixed(vectors, rows=None):
    """``vectors``' columns (and ``rows``' matching rows) each flipped so that the sum of
    the column's cubes is positive. Eigen- and singular vectors are unique only up to such
    a sign, and two LAPACK builds (NumPy's, SciPy's under Numba) may choose differently;
    the factors compared with this fixed are unique."""
    cubes = np.sum(vectors * vectors * vectors, axis=-2, keepdims=True)
    flip = np.where(cubes < 0, -1.0, 1.0).astype(vectors.dtype)
    if rows is None:
        return vectors * flip
    return vectors * flip, rows * np.swapaxes(flip, -1, -2)


def _positive_definite(a):
    n = a.shape[-2]
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n, dtype=a.dtype)


@case(
    "linalg_solve_inv",
    [
        (f64(3, 3), f64(3, 2)),
        (f32(2, 4, 4), f32(2, 4, 1)),
        (f64(2, 3, 3), f64(3)),
        (f64(1, 1), f64(1)),
        (f32(3, 1, 2, 2), f32(2, 2, 3)),
        (i32(3, 3), i32(3)),
    ],
    tags=["linalg", "grad"],
    tolerance=DECOMPOSITION,
)
def linalg_solve_inv(a, b):
    a = _shifted(a)
    return np.linalg.solve(a, b), np.linalg.inv(a), np.linalg.solve(a.swapaxes(-1, -2), b)


@case(
    "linalg_det",
    [(f64(3, 3),), (f32(2, 4, 4),), (f64(1, 1),), (f64(2, 1, 5, 5),), (f64(0, 0),)],
    tags=["linalg", "grad"],
    tolerance=DECOMPOSITION,
)
def linalg_det(a):
    sign, logabsdet = np.linalg.slogdet(a)
    return np.linalg.det(a), sign, logabsdet, np.linalg.det(_shifted(a))


@case(
    "linalg_cholesky",
    [(f64(3, 3),), (f32(2, 4, 4),), (f64(1, 1),), (f64(2, 1, 3, 3),)],
    tags=["linalg", "grad"],
    tolerance=DECOMPOSITION,
)
def linalg_cholesky(a):
    spd = _positive_definite(a)
    # The upper triangle is not read: what is added there changes nothing, nor does its
    # derivative.
    return np.linalg.cholesky(spd + np.triu(a, 1)), np.linalg.cholesky(spd, upper=True)


@case(
    "linalg_qr",
    [(f64(4, 3),), (f32(2, 3, 5),), (f64(3, 3),), (f64(1, 1),), (f32(2, 6, 2),)],
    tags=["linalg", "grad"],
    tolerance=DECOMPOSITION,
)
def linalg_qr(a):
    q, r = np.linalg.qr(a)
    return q, r, np.linalg.qr(a, mode="r")


@case(
    "linalg_qr_complete",
    [(f64(4, 3),), (f32(2, 3, 5),), (f64(1, 3),), (f64(2, 5, 1),)],
    tags=["linalg"],
    tolerance=DECOMPOSITION,
)
def linalg_qr_complete(a):
    return tuple(np.linalg.qr(a, mode="complete"))


@case(
    "linalg_eigh",
    [(f64(4, 4),), (f32(2, 3, 3),), (f64(1, 1),), (f64(2, 1, 3, 3),)],
    tags=["linalg", "grad"],
    tolerance=DECOMPOSITION,
)
def linalg_eigh(a):
    w, v = np.linalg.eigh(a)  # the lower triangle's symmetric matrix
    v = sign_fixed(v)
    # UPLO='U' factorizes the transpose: sign-free quantities only.
    upper = np.linalg.eigh(a, UPLO="U")
    vectors = upper.eigenvectors
    rebuilt = vectors @ (upper.eigenvalues[..., None] * np.swapaxes(vectors, -1, -2))
    return w, v, np.linalg.eigvalsh(a, UPLO="U"), rebuilt


@case(
    "linalg_svd",
    [(f64(4, 3),), (f32(2, 3, 5),), (f64(3, 3),), (f64(1, 1),), (f32(2, 1, 2, 4),)],
    tags=["linalg", "grad"],
    tolerance=DECOMPOSITION,
)
def linalg_svd(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    u, vh = sign_fixed(u, vh)
    return u, s, vh, np.linalg.svd(a, compute_uv=False), np.linalg.svdvals(a)


@case(
    "linalg_svd_full",
    [(f64(4, 3),), (f32(2, 3, 5),), (f64(1, 2),)],
    tags=["linalg"],
    tolerance=DECOMPOSITION,
)
def linalg_svd_full(a):
    u, s, vh = np.linalg.svd(a)  # full_matrices: u and vh square
    k = s.shape[-1]
    # The first k vectors are unique up to a sign each; the others only span the null
    # spaces (any orthonormal basis of them will do): those compare as projectors.
    u_k, vh_k = sign_fixed(u[..., :k], vh[..., :k, :])
    u_null, v_null = u[..., k:], np.swapaxes(vh[..., k:, :], -1, -2)
    projectors = (u_null @ np.swapaxes(u_null, -1, -2), v_null @ np.swapaxes(v_null, -1, -2))
    square = _positive_definite(a)
    hermitian = np.linalg.svd(square, hermitian=True, compute_uv=False)
    return u_k, s, vh_k, *projectors, hermitian


_NORM_ORDERS = (None, 1, -1, 2, -2, np.inf, -np.inf, 0, 3, 0.5)
_MATRIX_ORDERS = (None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf)


@case(
    "linalg_norm",
    [(f64(3, 4),), (f32(2, 3, 5),), (f64(1, 1),), (i32(4, 2),)],
    tags=["linalg", "grad"],
    tolerance=DECOMPOSITION,
)
def linalg_norm(x):
    vectors = [np.linalg.norm(x, order, axis=-1) for order in _NORM_ORDERS if order != 0]
    matrices = [np.linalg.norm(x, order, axis=(-2, -1)) for order in _MATRIX_ORDERS]
    return (
        np.linalg.norm(x),
        np.linalg.norm(x, keepdims=True),
        np.linalg.norm(x, 0, axis=0, keepdims=True),
        np.linalg.norm(x, "fro", axis=(-1, -2), keepdims=True),
        *vectors,
        *matrices,
        np.linalg.vector_norm(x, ord=3),
        np.linalg.matrix_norm(x, ord="nuc"),
        np.linalg.cond(_shifted(x[..., :1, :1])),
    )


@case(
    "linalg_pinv_lstsq",
    [(f64(4, 3), f64(4)), (f32(3, 5), f32(3, 2)), (f64(3, 3), f64(3, 1)), (f64(1, 1), f64(1))],
    tags=["linalg", "grad"],
    tolerance=DECOMPOSITION,
)
def linalg_pinv_lstsq(a, b):
    x, residuals, rank, s = np.linalg.lstsq(a, b)
    return np.linalg.pinv(a), np.linalg.pinv(a, rtol=0.1), x, residuals, rank, s


@case(
    "linalg_products",
    [(f64(3, 3), f64(3)), (f32(2, 4, 4), f32(4)), (f64(1, 1), f64(1))],
    tags=["linalg", "grad"],
    tolerance=DECOMPOSITION,
)
def linalg_products(a, v):
    b = _shifted(a)
    rows = a.reshape(-1, a.shape[-1])  # the stack's rows: multi_dot takes 2-d arrays
    return (
        np.linalg.matrix_power(a, 0),
        np.linalg.matrix_power(a, 1),
        np.linalg.matrix_power(a, 5),
        np.linalg.matrix_power(b, -2),
        np.linalg.matrix_rank(a),
        np.linalg.matrix_rank(a[..., :1], tol=0.5),
        np.linalg.multi_dot([rows, rows.T, rows, v]),
        np.linalg.multi_dot([v, rows.T, rows]),
        np.linalg.multi_dot([v, rows.T, rows, v]),
        np.linalg.multi_dot([rows.T, rows]),
    )


def _scipy_triangular(a, b):
    spd = _positive_definite(a)
    lower = np.linalg.cholesky(spd)
    return (
        scipy.linalg.solve_triangular(lower, b, lower=True),
        scipy.linalg.solve_triangular(a * 0.25, b, trans="T", unit_diagonal=True),
        scipy.linalg.solve_triangular(_shifted(a), b, trans=1),
        scipy.linalg.cho_solve((lower, True), b),
        scipy.linalg.cho_solve((lower.T, False), b),
    )


def _numbax_triangular(a, b):
    linalg = numbax.scipy.linalg
    spd = _positive_definite(a)
    lower = np.linalg.cholesky(spd)
    return (
        linalg.solve_triangular(lower, b, lower=True),
        linalg.solve_triangular(a * 0.25, b, trans="T", unit_diagonal=True),
        linalg.solve_triangular(_shifted(a), b, trans=1),
        linalg.cho_solve((lower, True), b),
        linalg.cho_solve((lower.T, False), b),
    )


@case(
    "scipy_linalg_triangular",
    [(f64(3, 3), f64(3, 2)), (f32(4, 4), f32(4)), (f64(1, 1), f64(1, 1))],
    reference=_scipy_triangular,
    tags=["linalg", "grad"],
    tolerance=DECOMPOSITION,
)
def scipy_linalg_triangular(a, b):
    return _numbax_triangular(a, b)


@dual_case(
    "linalg_namespace",
    [(f64(3, 3), f64(3, 2)), (f32(2, 3, 3), f32(2, 3, 2))],
    tags=["linalg", "grad"],
    tolerance=DECOMPOSITION,
)
def linalg_namespace(xp):
    def fn(a, b):
        a = a + 9.0 * xp.eye(3, dtype=a.dtype)
        sign, logabsdet = xp.linalg.slogdet(a)
        return xp.linalg.solve(a, b), xp.linalg.det(a), logabsdet, xp.linalg.norm(b, axis=-2)

    return fn
