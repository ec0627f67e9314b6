"""``numpy.linalg``, traced.

Six factorizations are primitives (``ir/linalg.py``): ``cholesky``, ``triangular_solve``,
``lu``, ``qr``, ``eigh``, ``svd``. Everything else is a composition of them with the
other primitives, so derivatives, batching and every backend come with it: ``solve``
and ``inv`` are an LU and two triangular solves (one triangular solve of a matrix that is
a Cholesky factor, or its transpose, as traced), ``det`` and ``slogdet`` LU's diagonal
and its row swaps, ``tensorinv`` and ``tensorsolve`` ``inv`` and ``solve`` of the tensors
as matrices, ``pinv``, ``lstsq`` and ``matrix_rank`` the SVD, ``norm`` reductions
or singular values, ``matrix_power`` repeated squaring, ``multi_dot`` matrix products in
the cheapest order.

NumPy's stacked semantics: a ``(..., m, n)`` argument is a stack of matrices, and two
stacks broadcast. Inputs are float32 or float64 (integers and bools compute in float64,
as NumPy). Where NumPy's answer is not static or
raises, numbax says what it does instead:

- a singular matrix: ``solve`` and ``inv`` give infinities or NaNs (NumPy raises
  LinAlgError; JAX does the same as numbax), ``det`` gives 0 and ``slogdet`` (0, -inf)
  as NumPy; ``cholesky`` of a matrix that is not positive definite gives NaNs.
- ``lstsq``'s residuals have a static shape: ``(k,)`` whenever ``m > n``, the squared
  residual norms (NumPy returns an empty array when the rank is below ``n``, which is
  known only at run time); its rank is an int32 array.
- eigenvectors and singular vectors are LAPACK's, as NumPy's, but ``eigh(UPLO='U')``
  factorizes the transpose, so its eigenvectors may differ from NumPy's in sign.

Each name in ``FUNCTIONS`` joins ``numbax.numpy.linalg`` and NumPy's dispatch table (the
array-API variants, ``linalg.cross``, ``linalg.vecdot``, ..., are ``numpy_array_api``'s);
SciPy's ``solve_triangular`` and ``cho_solve`` (``numbax.scipy.linalg``) are
``scipy_linalg``'s, built on the helpers here.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from ..ir import dtypes
from ..ir.errors import NumbaxTypeError, ShapeError, UnsupportedFunctionError
from ..tracer import indexing, lax
from ..tracer import lax_linalg as la
from ..tracer.core import producer
from ..tracer.functionalize import write_out
from ..tracer.promote import asarray, broadcast_shapes, convert, normalize_axis, result_type
from ..tracer.source_info import error_at_user_line as _error
from . import linalg, numpy_array_api, numpy_statistics, reductions, shapes, sorting, ufuncs

# NumPy's own result classes (named tuples, not public by name): a traced result has the
# type, and so the pytree structure, of NumPy's.
SlogdetResult = type(np.linalg.slogdet(np.eye(1)))
EighResult = type(np.linalg.eigh(np.eye(1)))
QRResult = type(np.linalg.qr(np.eye(1)))
SVDResult = type(np.linalg.svd(np.eye(1)))


def float_dtype(*xs, name: str) -> np.dtype:
    """NumPy's linalg dtype: float32 stays, float64 stays, integers and bools are float64."""
    dtype = result_type(*xs)
    if dtype.kind in "biu":
        return dtypes.float64
    if dtype not in (dtypes.float32, dtypes.float64):
        raise _error(
            UnsupportedFunctionError,
            f"numpy.linalg.{name}: {dtype} matrices are not supported: convert to float32 or "
            "float64 first",
        )
    return dtype


def matrix_stack(a, name: str, *, square: bool = False, dtype=None):
    """``a`` as a float stack of matrices, checked as NumPy's linalg checks it."""
    x = asarray(a)
    if x.ndim < 2:
        raise _error(
            ShapeError,
            f"numpy.linalg.{name}: {x.ndim}-dimensional array given; the array must be at "
            "least two-dimensional (a stack of matrices)",
        )
    if square and x.shape[-1] != x.shape[-2]:
        raise _error(
            ShapeError,
            f"numpy.linalg.{name}: the last 2 dimensions of the array must be square, got "
            f"{x.shape}",
        )
    return convert(x, dtype or float_dtype(x, name=name))


def broadcast_batch(a, b, name: str):
    """Two stacks broadcast to one batch shape (their matrix shapes kept)."""
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2], operation=f"numpy.linalg.{name}")
    return (
        lax.broadcast_to_rank(a, batch + a.shape[-2:]),
        lax.broadcast_to_rank(b, batch + b.shape[-2:]),
    )


# --- solving ---------------------------------------------------------------------------------


def _permute_rows(x, permutation):
    """``x[..., permutation, :]`` for each matrix of the stack (one flat gather)."""
    *batch, n, k = x.shape
    count = math.prod(batch)
    offsets = lax.iota(permutation.dtype, (count, n), 0) * np.asarray(n, permutation.dtype)
    rows = lax.reshape(permutation, (count, n)) + offsets
    flat = lax.reshape(x, (count * n, k))
    return lax.reshape(lax.gather(flat, lax.reshape(rows, (count * n,)), 0), x.shape)


def _triangular_by_construction(a) -> bool | None:
    """Whether ``a`` is, as traced, a Cholesky factor (True: lower triangular) or its
    matrix transpose (False: upper), or None: anything else, a factor written into since
    included (``tracer.core.producer``)."""
    eqn = producer(a)
    if eqn is None:
        return None
    if eqn.prim.name == "cholesky":
        return True
    swap = (*range(a.ndim - 2), a.ndim - 1, a.ndim - 2)
    if eqn.prim.name == "transpose" and tuple(eqn.params["permutation"]) == swap:
        below = producer(a, eqn.inputs[0])
        if below is not None and below.prim.name == "cholesky":
            return False
    return None


def _lu_solve(a, b):
    """``a⁻¹ b`` for stacks of equal batch shape: ``U⁻¹ L⁻¹ P b``; a Cholesky factor or its
    transpose, triangular by construction, by one triangular solve (the LU of a triangular
    matrix costs n³/3 multiplies to find the same answer: a Gaussian process's three
    solves on its factor)."""
    lower = _triangular_by_construction(a)
    if lower is not None:
        return la.triangular_solve(a, b, lower=lower)
    packed, _, permutation = la.lu(a)
    y = la.triangular_solve(packed, _permute_rows(b, permutation), lower=True, unit_diagonal=True)
    return la.triangular_solve(packed, y, lower=False)


def solve(a, b):
    a = asarray(a)
    b = asarray(b)
    dtype = float_dtype(a, b, name="solve")
    a = matrix_stack(a, "solve", square=True, dtype=dtype)
    b = convert(b, dtype)
    vector = b.ndim == 1  # NumPy 2: only a 1-d b is a vector; (..., m, k) otherwise
    if vector:
        b = lax.reshape(b, (b.shape[0], 1))
    if b.ndim < 2 or b.shape[-2] != a.shape[-1]:
        raise _error(
            ShapeError,
            f"numpy.linalg.solve: b of shape {b.shape} does not match a of shape {a.shape}: b "
            "must be (m,) or (..., m, k) for a of shape (..., m, m)",
        )
    a, b = broadcast_batch(a, b, "solve")
    x = _lu_solve(a, b)
    return lax.reshape(x, x.shape[:-1]) if vector else x


def inv(a):
    a = matrix_stack(a, "inv", square=True)
    return _lu_solve(a, la.eye(a.shape[-1], a.dtype, a.shape[:-2]))


def tensorinv(a, ind=2):
    """The inverse of ``a`` as a tensor: its first ``ind`` axes by the rest, ``inv`` of that
    matrix, reshaped to the rest by the first ``ind``."""
    a = asarray(a)
    ind = operator.index(ind)
    if ind <= 0:
        raise _error(ValueError, f"numpy.linalg.tensorinv: ind must be positive, not {ind}")
    rows = math.prod(a.shape[ind:])
    return lax.reshape(inv(shapes.reshape(a, (rows, -1))), a.shape[ind:] + a.shape[:ind])


def tensorsolve(a, b, axes=None):
    """``x`` with ``tensordot(a, x, x.ndim) == b``: ``solve`` of ``a`` and ``b`` as a matrix
    and a vector; ``axes`` (non-negative, as NumPy's) are moved last in ``a`` first."""
    a, b = asarray(a), asarray(b)
    if axes is not None:
        order = list(range(a.ndim))
        for k in axes:
            if k not in order:
                raise _error(
                    ValueError,
                    f"numpy.linalg.tensorsolve: axes {tuple(axes)} must be distinct axes of a "
                    f"({a.ndim}-d), counted from 0 (NumPy refuses negative ones too)",
                )
            order.remove(k)
            order.append(k)
        a = shapes.transpose(a, order)
    shape = a.shape[-(a.ndim - b.ndim) :]
    count = math.prod(shape)
    if a.size != count**2:
        raise _error(
            ShapeError,
            f"numpy.linalg.tensorsolve: a {a.shape} and b {b.shape} must satisfy "
            "prod(a.shape[b.ndim:]) == prod(a.shape[:b.ndim]) (NumPy raises LinAlgError)",
        )
    x = solve(lax.reshape(a, (count, count)), lax.reshape(b, (b.size,)))
    return lax.reshape(x, shape)


def _lu_diagonal_and_sign(a):
    """U's diagonal and the sign of the row permutation (each swap flips it)."""
    packed, pivots, _ = la.lu(a)
    swapped = lax.ne(pivots, lax.iota(pivots.dtype, pivots.shape, pivots.ndim - 1))
    flips = lax.select(
        swapped, lax.full(pivots.shape, -1, a.dtype), lax.full(pivots.shape, 1, a.dtype)
    )
    return la.diagonal(packed), lax.reduce_prod(flips, (pivots.ndim - 1,))


def det(a):
    a = matrix_stack(a, "det", square=True)
    diagonal, sign = _lu_diagonal_and_sign(a)
    return sign * lax.reduce_prod(diagonal, (diagonal.ndim - 1,))


def slogdet(a):
    a = matrix_stack(a, "slogdet", square=True)
    diagonal, sign = _lu_diagonal_and_sign(a)
    last = (diagonal.ndim - 1,)
    sign = sign * lax.reduce_prod(lax.sign(diagonal), last)
    return SlogdetResult(sign, lax.reduce_sum(lax.log(lax.abs(diagonal)), last))


def cholesky(a, /, *, upper=False):
    a = matrix_stack(a, "cholesky", square=True)
    if upper:  # the upper factor of the upper triangle: the lower one of the transpose
        return la.mT(la.cholesky(la.mT(a)))
    return la.cholesky(a)


# --- factorizations --------------------------------------------------------------------------

_QR_MODES = ("reduced", "complete", "r", "raw")


def qr(a, mode="reduced"):
    if mode not in _QR_MODES:
        raise _error(ValueError, f"numpy.linalg.qr: mode must be one of {_QR_MODES}, not {mode!r}")
    if mode == "raw":
        raise _error(
            UnsupportedFunctionError,
            "numpy.linalg.qr: mode='raw' (LAPACK's Householder reflectors) is not supported; "
            "use mode='reduced' or 'complete'",
        )
    a = matrix_stack(a, "qr")
    q, r = la.qr(a, full_matrices=mode == "complete")
    return r if mode == "r" else QRResult(q, r)


def _lower_read(a, uplo: str, name: str):
    """The stack whose lower triangle is the one ``UPLO`` names."""
    if uplo not in ("L", "U"):
        raise _error(ValueError, f"numpy.linalg.{name}: UPLO must be 'L' or 'U', not {uplo!r}")
    return a if uplo == "L" else la.mT(a)


def eigh(a, UPLO="L"):  # noqa: N803 (NumPy's name)
    a = matrix_stack(a, "eigh", square=True)
    return EighResult(*la.eigh(_lower_read(a, UPLO, "eigh")))


def eigvalsh(a, UPLO="L"):  # noqa: N803
    a = matrix_stack(a, "eigvalsh", square=True)
    return la.eigh(_lower_read(a, UPLO, "eigvalsh"))[0]


def _descending(values, *others):
    """``values`` sorted descending along the last axis, ``others`` permuted alike (as
    columns when they are matrices)."""
    order = shapes.flip(sorting.argsort(values, axis=-1), axis=-1)
    out = [indexing.take_along_axis(values, order, axis=-1)]
    for x in others:
        index = order if x.ndim == values.ndim else lax.expand_dims(order, (order.ndim - 1,))
        out.append(indexing.take_along_axis(x, shapes.broadcast_to(index, x.shape), axis=-1))
    return out


def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    a = matrix_stack(a, "svd")
    if hermitian:  # NumPy's way: |eigenvalues| descending, the signs moved into vt
        a = matrix_stack(a, "svd", square=True)
        if not compute_uv:
            return _descending(lax.abs(eigvalsh(a)))[0]
        w, v = la.eigh(a)
        s, signs, u = _descending(lax.abs(w), lax.sign(w), v)
        return SVDResult(u, s, la.mT(u * la.row(signs)))
    outs = la.svd(a, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv))
    return SVDResult(*outs) if compute_uv else outs[0]


def svdvals(x, /):
    return svd(x, compute_uv=False)


# --- norms -----------------------------------------------------------------------------------


def _vector_norm(x, ord, axis, keepdims):
    absolute = lax.abs(x)
    if ord == np.inf:
        return reductions.max(absolute, axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return reductions.min(absolute, axis=axis, keepdims=keepdims)
    if ord == 0:
        nonzero = lax.convert_element_type(lax.ne(x, np.zeros((), x.dtype)), x.dtype)
        return reductions.sum(nonzero, axis=axis, keepdims=keepdims)
    if ord == 1:
        return reductions.sum(absolute, axis=axis, keepdims=keepdims)
    if ord is None or ord == 2:
        return lax.sqrt(reductions.sum(x * x, axis=axis, keepdims=keepdims))
    if isinstance(ord, str):
        raise _error(ValueError, f"numpy.linalg.norm: invalid norm order {ord!r} for vectors")
    power = np.asarray(ord, x.dtype)
    return reductions.sum(absolute**power, axis=axis, keepdims=keepdims) ** (1 / power)


def _singular_values_along(x, row_axis, col_axis):
    y = shapes.moveaxis(x, (row_axis, col_axis), (-2, -1))
    return la.svd(y, full_matrices=False, compute_uv=False)[0]


def _matrix_norm(x, ord, row_axis, col_axis):
    if ord in (2, -2):
        s = _singular_values_along(x, row_axis, col_axis)
        return (reductions.max if ord == 2 else reductions.min)(s, axis=-1)
    if ord == "nuc":
        return reductions.sum(_singular_values_along(x, row_axis, col_axis), axis=-1)
    if ord in (None, "fro", "f"):
        return lax.sqrt(reductions.sum(x * x, axis=(row_axis, col_axis)))
    if ord in (1, -1, np.inf, -np.inf):
        # 1: the largest column sum (over rows); inf: the largest row sum (over columns).
        summed, kept = (row_axis, col_axis) if ord in (1, -1) else (col_axis, row_axis)
        sums = reductions.sum(lax.abs(x), axis=summed)
        pick = reductions.max if ord in (1, np.inf) else reductions.min
        return pick(sums, axis=kept - 1 if kept > summed else kept)
    raise _error(ValueError, f"numpy.linalg.norm: invalid norm order {ord!r} for matrices")


def norm(x, ord=None, axis=None, keepdims=False):
    x = asarray(x)
    x = convert(x, float_dtype(x, name="norm"))
    if axis is None:
        if ord is None or (ord in ("f", "fro") and x.ndim == 2) or (ord == 2 and x.ndim == 1):
            flat = lax.reshape(x, (x.size,))
            out = lax.sqrt(reductions.sum(flat * flat))
            return lax.reshape(out, (1,) * x.ndim) if keepdims else out
        axis = tuple(range(x.ndim))
    elif not isinstance(axis, tuple):
        try:
            axis = (operator.index(axis),)
        except TypeError:
            raise _error(
                NumbaxTypeError, "numpy.linalg.norm: axis must be None, an integer or a tuple"
            ) from None
    axes = tuple(normalize_axis(a, x.ndim, "numpy.linalg.norm") for a in axis)
    if len(axes) == 1:
        return _vector_norm(x, ord, axes, keepdims)
    if len(axes) != 2:
        raise _error(ValueError, "numpy.linalg.norm: improper number of dimensions to norm")
    if axes[0] == axes[1]:
        raise _error(ValueError, "numpy.linalg.norm: duplicate axes given")
    out = _matrix_norm(x, ord, *axes)
    if keepdims:
        shape = [1 if i in axes else d for i, d in enumerate(x.shape)]
        out = lax.reshape(out, shape)
    return out


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    x = asarray(x)
    if axis is None:
        flat = lax.reshape(x, (x.size,))
        out = norm(flat, ord=ord, axis=0)
        return lax.reshape(out, (1,) * x.ndim) if keepdims else out
    return norm(x, ord=ord, axis=axis, keepdims=keepdims)


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


# --- the SVD's consequences ------------------------------------------------------------------

_NO_VALUE = object()


def _eps(dtype) -> float:
    return float(np.finfo(dtype).eps)


def pinv(a, rcond=None, hermitian=False, *, rtol=_NO_VALUE):
    a = matrix_stack(a, "pinv")
    if rcond is None:
        if rtol is _NO_VALUE:
            rcond = 1e-15
        elif rtol is None:
            rcond = max(a.shape[-2:]) * _eps(a.dtype)
        else:
            rcond = rtol
    elif rtol is not _NO_VALUE:
        raise _error(ValueError, "numpy.linalg.pinv: rtol and rcond can't be both set")
    u, s, vt = svd(a, full_matrices=False, hermitian=hermitian)
    cutoff = lax.expand_dims(convert(asarray(rcond), a.dtype), (np.ndim(rcond),))
    cutoff = cutoff * reductions.max(s, axis=-1, keepdims=True, initial=0)
    large = s > cutoff
    # 1/s only where it is kept: a NaN or inf from a zero never reaches the product.
    s_inv = ufuncs.where(large, 1 / ufuncs.where(large, s, 1), 0)
    return linalg.matmul(la.mT(vt), la.column(s_inv) * la.mT(u))


def lstsq(a, b, rcond=None):
    a, b = asarray(a), asarray(b)
    dtype = float_dtype(a, b, name="lstsq")
    vector = b.ndim == 1
    b = convert(lax.reshape(b, (b.shape[0], 1)) if vector else b, dtype)
    a = convert(a, dtype)
    if a.ndim != 2 or b.ndim != 2:
        raise _error(
            ShapeError,
            f"numpy.linalg.lstsq: a {a.shape} and b {b.shape} must be two-dimensional (b may "
            "be one-dimensional); for stacks, use numbax.vmap",
        )
    m, n = a.shape
    if b.shape[0] != m:
        raise _error(
            ShapeError, f"numpy.linalg.lstsq: incompatible dimensions {a.shape}, {b.shape}"
        )
    if rcond is None:
        rcond = _eps(dtype) * max(m, n)
    u, s, vt = la.svd(a, full_matrices=False, compute_uv=True)
    large = s > np.asarray(rcond, dtype) * reductions.max(s, initial=0)
    s_inv = ufuncs.where(large, 1 / ufuncs.where(large, s, 1), 0)
    x = linalg.matmul(la.mT(vt), la.column(s_inv) * linalg.matmul(la.mT(u), b))
    rank = lax.reduce_sum(lax.convert_element_type(large, dtypes.int32), (0,))
    if m > n:
        difference = b - linalg.matmul(a, x)
        residuals = reductions.sum(difference * difference, axis=0)
    else:
        residuals = lax.full((0,), 0, dtype)
    if vector:
        x = lax.reshape(x, (n,))
    return x, residuals, rank, s


def matrix_rank(A, tol=None, hermitian=False, *, rtol=None):  # noqa: N803
    if rtol is not None and tol is not None:
        raise _error(ValueError, "numpy.linalg.matrix_rank: tol and rtol can't be both set")
    x = asarray(A)
    if x.ndim < 2:
        return lax.convert_element_type(numpy_statistics.any(x != 0), dtypes.int64)
    s = svd(x, compute_uv=False, hermitian=hermitian)
    if tol is None:
        if rtol is None:
            rtol = max(x.shape[-2:]) * _eps(s.dtype)
        else:
            rtol = lax.expand_dims(convert(asarray(rtol), s.dtype), (np.ndim(rtol),))
        tol = reductions.max(s, axis=-1, keepdims=True, initial=0) * rtol
    else:
        tol = lax.expand_dims(convert(asarray(tol), s.dtype), (np.ndim(tol),))
    return reductions.sum(lax.convert_element_type(s > tol, dtypes.int64), axis=-1)


def cond(x, p=None):
    x = matrix_stack(x, "cond")
    if p is None or p in (2, -2):
        s = svd(x, compute_uv=False)
        largest, smallest = indexing.take(s, 0, axis=-1), indexing.take(s, -1, axis=-1)
        return largest / smallest if p != -2 else smallest / largest
    return norm(x, p, axis=(-2, -1)) * norm(inv(x), p, axis=(-2, -1))


# --- products --------------------------------------------------------------------------------


def matrix_power(a, n):
    a = asarray(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        matrix_stack(a, "matrix_power", square=True)
    try:
        n = operator.index(n)
    except TypeError:
        raise _error(
            NumbaxTypeError,
            "numpy.linalg.matrix_power: the exponent must be a Python integer (static; a "
            "traced exponent changes the program)",
        ) from None
    if n == 0:
        return la.eye(a.shape[-1], a.dtype, a.shape[:-2])
    if n < 0:
        a, n = inv(a), -n
    square, result = a, None
    while n > 0:  # the bits of n from the lowest: a, a², a⁴, ... multiplied in
        n, bit = divmod(n, 2)
        if bit:
            result = square if result is None else linalg.matmul(result, square)
        if n:
            square = linalg.matmul(square, square)
    return result


def _chain_order(shapes) -> dict:
    """The split of each sub-chain that needs the fewest multiplications (NumPy's
    dynamic programme)."""
    p = [shape[0] for shape in shapes] + [shapes[-1][1]]
    count = len(shapes)
    cost = {(i, i): 0 for i in range(count)}
    split = {}
    for length in range(1, count):
        for i in range(count - length):
            j = i + length
            cost[i, j] = math.inf
            for k in range(i, j):
                q = cost[i, k] + cost[k + 1, j] + p[i] * p[k + 1] * p[j + 1]
                if q < cost[i, j]:
                    cost[i, j], split[i, j] = q, k
    return split


def multi_dot(arrays, *, out=None):
    arrays = [asarray(a) for a in arrays]
    if len(arrays) < 2:
        raise _error(ValueError, "numpy.linalg.multi_dot: expecting at least two arrays")
    first, last = arrays[0].ndim, arrays[-1].ndim
    if first == 1:
        arrays[0] = lax.reshape(arrays[0], (1, arrays[0].shape[0]))
    if last == 1:
        arrays[-1] = lax.reshape(arrays[-1], (arrays[-1].shape[0], 1))
    if any(x.ndim != 2 for x in arrays):
        raise _error(
            ShapeError,
            "numpy.linalg.multi_dot: every array but the first and the last must be "
            f"two-dimensional, got shapes {[tuple(x.shape) for x in arrays]}",
        )
    split = _chain_order([x.shape for x in arrays])

    def product(i, j):
        if i == j:
            return arrays[i]
        return linalg.dot(product(i, split[i, j]), product(split[i, j] + 1, j))

    result = product(0, len(arrays) - 1)
    if first == 1 and last == 1:
        result = lax.reshape(result, ())
    elif first == 1 or last == 1:
        result = lax.reshape(result, (result.size,))
    return result if out is None else write_out(out, result, "linalg.multi_dot", "same_kind")


FUNCTIONS = {
    "cholesky": cholesky,
    "cond": cond,
    "det": det,
    "eigh": eigh,
    "eigvalsh": eigvalsh,
    "inv": inv,
    "lstsq": lstsq,
    "matrix_norm": matrix_norm,
    "matrix_power": matrix_power,
    "matrix_rank": matrix_rank,
    "multi_dot": multi_dot,
    "norm": norm,
    "pinv": pinv,
    "qr": qr,
    "slogdet": slogdet,
    "solve": solve,
    "svd": svd,
    "svdvals": svdvals,
    "tensorinv": tensorinv,
    "tensorsolve": tensorsolve,
    "vector_norm": vector_norm,
    **numpy_array_api.LINALG_FUNCTIONS,
}

_COMPLEX_EIGENVALUES = (
    "the eigenvalues and eigenvectors of a general real matrix are complex, and numbax's "
    "linear algebra has no complex LAPACK routines (geev) yet; for a symmetric matrix use "
    "numpy.linalg.eigh / eigvalsh, or call it outside the traced function"
)
# NumPy functions refused with a reason of their own (docs/numpy_support.md lists them).
LIMITATIONS = {"eig": _COMPLEX_EIGENVALUES, "eigvals": _COMPLEX_EIGENVALUES}
