"""``numbax.scipy.linalg``: the ``scipy.linalg`` functions numbax traces.

>>> import numpy as np
>>> from numbax.scipy.linalg import solve_triangular
>>> solve_triangular(np.array([[2.0, 0.0], [1.0, 1.0]]), np.array([2.0, 3.0]), lower=True)
array([1., 2.])
"""

from __future__ import annotations

from ..ir.errors import ShapeError
from ..tracer import lax
from ..tracer import lax_linalg as la
from ..tracer.promote import asarray, convert
from ..tracer.source_info import error_at_user_line as _error
from .numpy_linalg import broadcast_batch, float_dtype, matrix_stack

__all__ = ["cho_solve", "solve_triangular"]

# Triangular solves over stacks of matrices, read as numpy_linalg reads them.

_TRANS = {0: False, "N": False, 1: True, "T": True, 2: True, "C": True}


def solve_triangular(
    a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False, check_finite=True
):
    """``scipy.linalg.solve_triangular``, over stacks too: ``x`` with ``op(a) x = b``, ``a``
    read as its lower (``lower``) or upper triangle; ``trans`` 0/'N', 1/'T' (2/'C' is
    'T' for real matrices). ``overwrite_b`` and ``check_finite`` change nothing here.

    >>> import numpy as np, numbax
    >>> a = np.array([[2.0, 0.0], [1.0, 1.0]])
    >>> numbax.jit(lambda a, b: numbax.scipy.linalg.solve_triangular(a, b, lower=True))(
    ...     a, np.array([2.0, 3.0]))
    array([1., 2.])
    """
    if trans not in _TRANS:
        raise _error(
            ValueError, f"solve_triangular: trans must be 0, 1, 2, 'N', 'T' or 'C', not {trans!r}"
        )
    a, b = asarray(a), asarray(b)
    dtype = float_dtype(a, b, name="solve_triangular")
    a = matrix_stack(a, "solve_triangular", square=True, dtype=dtype)
    b = convert(b, dtype)
    vector = b.ndim == a.ndim - 1
    if vector:
        b = lax.expand_dims(b, (b.ndim,))
    if b.ndim < 2 or b.shape[-2] != a.shape[-1]:
        raise _error(
            ShapeError, f"solve_triangular: shapes of a {a.shape} and b {b.shape} are incompatible"
        )
    a, b = broadcast_batch(a, b, "solve_triangular")
    x = la.triangular_solve(
        a, b, lower=bool(lower), transpose_a=_TRANS[trans], unit_diagonal=bool(unit_diagonal)
    )
    return lax.reshape(x, x.shape[:-1]) if vector else x


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """``scipy.linalg.cho_solve``: ``x`` with ``A x = b`` from ``(c, lower)``, ``c`` the
    Cholesky factor of ``A`` in its lower (``A = c cᵀ``) or upper (``A = cᵀ c``) triangle.

    >>> import numpy as np, numbax
    >>> a = np.array([[4.0, 2.0], [2.0, 3.0]])
    >>> numbax.jit(lambda a, b: numbax.scipy.linalg.cho_solve(
    ...     (np.linalg.cholesky(a), True), b))(a, np.array([6.0, 5.0]))
    array([1., 1.])
    """
    c, lower = c_and_lower
    y = solve_triangular(c, b, trans=0 if lower else 1, lower=lower)
    return solve_triangular(c, y, trans=1 if lower else 0, lower=lower)
