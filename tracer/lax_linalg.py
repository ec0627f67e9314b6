"""Typed wrappers of the linear-algebra primitives (``ir/linalg.py``), lax-style, and the
matrix helpers that the front end (``numpy_linalg``) and the derivative rules
(``transforms/linalg_rules.py``) build on.

Every operand is a stack of matrices ``(..., m, n)``; two operands of one helper have
the same batch dimensions and dtype (the front end broadcasts and promotes first).
"""

from __future__ import annotations

import numpy as np

from ..ir.core import ShapedArray
from ..ir.linalg import cholesky_p, eigh_p, lu_p, qr_p, svd_p, triangular_solve_p
from . import lax
from .core import bind


def cholesky(a):
    return bind(cholesky_p, a)


def triangular_solve(a, b, *, lower: bool, transpose_a: bool = False, unit_diagonal=False):
    """``x`` with ``op(a) @ x == b``: ``op`` the transpose when ``transpose_a``."""
    return bind(
        triangular_solve_p,
        a,
        b,
        lower=bool(lower),
        transpose_a=bool(transpose_a),
        unit_diagonal=bool(unit_diagonal),
    )


def triangular_solve_right(a, b, *, lower: bool, transpose_a: bool = False, unit_diagonal=False):
    """``x`` with ``x @ op(a) == b``, as ``op(a).T @ x.T == b.T``."""
    x_t = triangular_solve(
        a, mT(b), lower=lower, transpose_a=not transpose_a, unit_diagonal=unit_diagonal
    )
    return mT(x_t)


def lu(a):
    """``(lu, pivots, permutation)``: ``a[..., permutation, :] == L @ U``."""
    return tuple(bind(lu_p, a))


def qr(a, *, full_matrices: bool):
    return tuple(bind(qr_p, a, full_matrices=bool(full_matrices)))


def eigh(a):
    """``(w, v)`` of the symmetric matrix of ``a``'s lower triangle, ``w`` ascending."""
    return tuple(bind(eigh_p, a))


def svd(a, *, full_matrices: bool, compute_uv: bool):
    """``(u, s, vt)``, or ``(s,)`` without ``compute_uv``; ``s`` descending."""
    return tuple(bind(svd_p, a, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv)))


# --- matrix helpers ------------------------------------------------------------------------


def shape_of(x) -> tuple[int, ...]:
    return tuple(np.shape(x))


def dtype_of(x):
    return x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype


def mT(x):
    """The transpose of every matrix of the stack."""
    ndim = len(shape_of(x))
    return lax.transpose(x, (*range(ndim - 2), ndim - 1, ndim - 2))


def matmul(x, y):
    """``x @ y`` for stacks of equal batch dimensions."""
    nb = len(shape_of(x)) - 2
    batch = tuple(range(nb))
    return lax.dot_general(x, y, (((nb + 1,), (nb,)), (batch, batch)))


def _band(shape, keep):
    """A bool mask of ``shape``'s last two dims: ``keep(row, column)``."""
    rows = lax.iota(np.int32, shape[-2:], 0)
    columns = lax.iota(np.int32, shape[-2:], 1)
    return lax.broadcast_to_rank(keep(rows, columns), shape)


def tril(x, k: int = 0):
    """``x`` below the ``k``-th diagonal, zeros above (``numpy.tril`` of each matrix)."""
    keep = _band(shape_of(x), lambda i, j: lax.ge(lax.add(i, np.int32(k)), j))
    return lax.select(keep, x, lax.zeros_like_aval(_aval(x)))


def triu(x, k: int = 0):
    keep = _band(shape_of(x), lambda i, j: lax.le(lax.add(i, np.int32(k)), j))
    return lax.select(keep, x, lax.zeros_like_aval(_aval(x)))


def diagonal(x):
    """``(..., n)``: the diagonal of each square matrix, a strided slice of it flat."""
    *batch, n, _ = shape_of(x)
    flat = lax.reshape(x, (*batch, n * n))
    zeros = (0,) * len(batch)
    return lax.slice(flat, (*zeros, 0), (*batch, n * n), (*(1,) * len(batch), n + 1))


def diag_part(x):
    """``x`` on the diagonal, zeros off it."""
    keep = _band(shape_of(x), lax.eq)
    return lax.select(keep, x, lax.zeros_like_aval(_aval(x)))


def diag_matrix(v):
    """``(..., n, n)`` with ``v`` on the diagonal."""
    shape = shape_of(v)
    n = shape[-1]
    square = (*shape, n)
    columns = lax.broadcast_in_dim(v, square, (*range(len(shape) - 1), len(shape)))
    return diag_part(columns)


def eye(n: int, dtype, batch=()):
    identity = lax.convert_element_type(_band((n, n), lax.eq), dtype)
    return lax.broadcast_to_rank(identity, (*batch, n, n))


def row(v):
    """``(..., n)`` as ``(..., 1, n)``: scales the columns of a matrix it multiplies."""
    return lax.expand_dims(v, (len(shape_of(v)) - 1,))


def column(v):
    """``(..., n)`` as ``(..., n, 1)``: scales the rows of a matrix it multiplies."""
    return lax.expand_dims(v, (len(shape_of(v)),))


def _aval(x) -> ShapedArray:
    return ShapedArray(shape_of(x), dtype_of(x))
