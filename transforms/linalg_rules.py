"""Forward, reverse and batching rules of the linear-algebra primitives (``ir/linalg.py``).

The forward rules are JAX's matrix calculus; each reverse rule is the adjoint of its
forward rule, derived term by term (``<ct, tangent(t)> == <cotangent(ct), t>``) and
written with the same triangular solves, so the backward pass is as cheap as the
forward one. Two differences from JAX, both so that a derivative is the derivative of
what the primitive computes: ``cholesky`` and ``eigh`` read only the lower triangle, so
a change of the upper triangle has no effect and gets a zero cotangent (JAX symmetrises
instead); and ``qr`` of a wide matrix is differentiated (its first square block's QR,
then ``r``'s other columns as ``q.T @ a``). Eigenvalues or singular values that coincide
make the eigenvector and singular-vector derivatives infinite, as in JAX.

Batching: every primitive takes a stack of matrices, so the batch dimension moves to
the front and the primitive is bound once.
"""

from __future__ import annotations

from ..ir.errors import GradientError
from ..ir.linalg import cholesky_p, eigh_p, lu_p, qr_p, svd_p, triangular_solve_p
from ..tracer import lax
from ..tracer import lax_linalg as la
from ..tracer.core import bind
from . import derivatives as d
from .batching import BATCH_RULES, axis_size, to_front
from .jvp import JVP_RULES
from .vjp_rules import VJP_RULES


def _zeros_if_none(ct, like):
    return lax.zeros_like_aval(d.aval(like)) if ct is None else ct


def _symmetric_of_lower(t):
    """The symmetric matrix that ``t``'s lower triangle makes: what the primitive reads."""
    return la.tril(t) + la.mT(la.tril(t, -1))


def _lower_of_symmetric(g):
    """The adjoint of ``_symmetric_of_lower``: ``g``'s lower triangle plus its upper one."""
    return la.tril(g) + la.tril(la.mT(g), -1)


def _inverse_gaps(w):
    """``F[i, j] = 1 / (w[j] - w[i])`` off the diagonal, zero on it."""
    n = la.shape_of(w)[-1]
    identity = la.eye(n, la.dtype_of(w), la.shape_of(w)[:-1])
    return 1 / (la.row(w) - la.column(w) + identity) - identity


# --- cholesky --------------------------------------------------------------------------------


def _half_diagonal_lower(x):
    """``tril(x)`` with its diagonal halved: ``L⁻¹ Ṡ L⁻ᵀ``'s share that is ``L⁻¹ L̇``."""
    return la.tril(x, -1) + 0.5 * la.diag_part(x)


@JVP_RULES.rule(cholesky_p)
def _cholesky_jvp(primals, tangents):
    (a,), (a_dot,) = primals, tangents
    lower = la.cholesky(a)
    sigma = _symmetric_of_lower(a_dot)
    inner = la.triangular_solve(
        lower, la.mT(la.triangular_solve(lower, sigma, lower=True)), lower=True
    )
    return [lower], [la.matmul(lower, _half_diagonal_lower(inner))]


@VJP_RULES.rule(cholesky_p)
def _cholesky_vjp(primals, wrt):
    (a,) = primals
    lower = la.cholesky(a)

    def backward(cts):
        (ct,) = cts
        if ct is None:
            return [None]
        phi = _half_diagonal_lower(la.matmul(la.mT(lower), ct))
        left = la.triangular_solve(lower, phi, lower=True, transpose_a=True)
        g = la.mT(la.triangular_solve(lower, la.mT(left), lower=True, transpose_a=True))
        return [_lower_of_symmetric(g)]

    return [lower], backward


# --- triangular_solve ------------------------------------------------------------------------


def _triangle_read(t, *, lower, unit_diagonal):
    """The entries of ``t`` that a solve with these flags reads."""
    if lower:
        return la.tril(t, -1 if unit_diagonal else 0)
    return la.triu(t, 1 if unit_diagonal else 0)


@JVP_RULES.rule(triangular_solve_p)
def _triangular_solve_jvp(primals, tangents, **flags):
    (a, b), (a_dot, b_dot) = primals, tangents
    x = la.triangular_solve(a, b, **flags)
    rhs = b_dot
    if a_dot is not None:
        t_dot = _triangle_read(a_dot, lower=flags["lower"], unit_diagonal=flags["unit_diagonal"])
        op_t_dot = la.mT(t_dot) if flags["transpose_a"] else t_dot
        rhs = d.add(rhs, -la.matmul(op_t_dot, x))
    return [x], [la.triangular_solve(a, rhs, **flags)]


@VJP_RULES.rule(triangular_solve_p)
def _triangular_solve_vjp(primals, wrt, *, lower, transpose_a, unit_diagonal):
    a, b = primals
    x = la.triangular_solve(a, b, lower=lower, transpose_a=transpose_a, unit_diagonal=unit_diagonal)

    def backward(cts):
        (ct,) = cts
        if ct is None:
            return [None, None]
        b_bar = la.triangular_solve(
            a, ct, lower=lower, transpose_a=not transpose_a, unit_diagonal=unit_diagonal
        )
        outer = la.matmul(x, la.mT(b_bar)) if transpose_a else la.matmul(b_bar, la.mT(x))
        return [-_triangle_read(outer, lower=lower, unit_diagonal=unit_diagonal), b_bar]

    return [x], backward


# --- lu --------------------------------------------------------------------------------------


def _permutation_matrix(permutation, like):
    """``P`` with ``P @ a == a[..., permutation, :]``."""
    n = la.shape_of(permutation)[-1]
    shape = (*la.shape_of(permutation), n)
    rows = lax.broadcast_in_dim(permutation, shape, tuple(range(len(shape) - 1)))
    columns = lax.broadcast_to_rank(lax.iota(la.dtype_of(permutation), (n,)), shape)
    return lax.convert_element_type(lax.eq(rows, columns), la.dtype_of(like))


def _lu_factors(lu):
    n = la.shape_of(lu)[-1]
    unit_lower = la.tril(lu, -1) + la.eye(n, la.dtype_of(lu), la.shape_of(lu)[:-2])
    return unit_lower, la.triu(lu)


@JVP_RULES.rule(lu_p)
def _lu_jvp(primals, tangents):
    (a,), (a_dot,) = primals, tangents
    lu, pivots, permutation = la.lu(a)
    permuted = la.matmul(_permutation_matrix(permutation, a), a_dot)
    left = la.triangular_solve(lu, permuted, lower=True, unit_diagonal=True)
    inner = la.triangular_solve_right(lu, left, lower=False)  # L⁻¹ P ȧ U⁻¹
    unit_lower, upper = _lu_factors(lu)
    lu_dot = la.matmul(unit_lower, la.tril(inner, -1)) + la.matmul(la.triu(inner), upper)
    return [lu, pivots, permutation], [lu_dot, None, None]


@VJP_RULES.rule(lu_p)
def _lu_vjp(primals, wrt):
    (a,) = primals
    lu, pivots, permutation = la.lu(a)

    def backward(cts):
        ct = cts[0]
        if ct is None:
            return [None]
        unit_lower, upper = _lu_factors(lu)
        inner = la.tril(la.matmul(la.mT(unit_lower), ct), -1) + la.triu(la.matmul(ct, la.mT(upper)))
        left = la.triangular_solve(lu, inner, lower=True, transpose_a=True, unit_diagonal=True)
        right = la.triangular_solve_right(lu, left, lower=False, transpose_a=True)
        return [la.matmul(la.mT(_permutation_matrix(permutation, a)), right)]

    return [lu, pivots, permutation], backward


# --- qr --------------------------------------------------------------------------------------


def _qr_differentiable(a, full_matrices):
    m, n = la.shape_of(a)[-2:]
    if full_matrices and m > n:
        raise GradientError(
            "qr: the derivative of mode='complete' for a tall matrix is not defined (the "
            "columns of q beyond the first n are any orthonormal completion): use "
            "mode='reduced'"
        )
    return m, n


def _tall_qr_jvp(q, r, a_dot):
    """``(q̇, ṙ)`` of a reduced QR with ``m >= n`` (JAX's rule)."""
    x = la.triangular_solve_right(r, a_dot, lower=False)  # ȧ R⁻¹
    c = la.matmul(la.mT(q), x)
    strict = la.tril(c, -1)
    omega = strict - la.mT(strict)
    return la.matmul(q, omega - c) + x, la.matmul(c - omega, r)


def _tall_qr_vjp(q, r, q_bar, r_bar):
    """The adjoint of ``_tall_qr_jvp``: ``ā`` from ``(q̄, r̄)``."""
    n_mat = la.matmul(la.mT(q), q_bar) - la.matmul(r_bar, la.mT(r))
    c_bar = la.tril(n_mat - la.mT(n_mat), -1) - n_mat
    x_bar = q_bar + la.matmul(q, c_bar)
    return la.triangular_solve_right(r, x_bar, lower=False, transpose_a=True)


def _wide_split(x, m):
    n = la.shape_of(x)[-1]
    return _columns(x, 0, m), _columns(x, m, n)


def _columns(x, start, stop):
    shape = la.shape_of(x)
    return lax.slice(x, (0,) * (len(shape) - 1) + (start,), (*shape[:-1], stop))


@JVP_RULES.rule(qr_p)
def _qr_jvp(primals, tangents, *, full_matrices):
    (a,), (a_dot,) = primals, tangents
    m, n = _qr_differentiable(a, full_matrices)
    q, r = la.qr(a, full_matrices=full_matrices)
    if m >= n:
        return [q, r], list(_tall_qr_jvp(q, r, a_dot))
    (r1, _), (a1_dot, a2_dot) = _wide_split(r, m), _wide_split(a_dot, m)
    q_dot, r1_dot = _tall_qr_jvp(q, r1, a1_dot)
    a2 = _columns(a, m, n)
    r2_dot = la.matmul(la.mT(q_dot), a2) + la.matmul(la.mT(q), a2_dot)
    return [q, r], [q_dot, lax.concatenate([r1_dot, r2_dot], len(la.shape_of(a)) - 1)]


@VJP_RULES.rule(qr_p)
def _qr_vjp(primals, wrt, *, full_matrices):
    (a,) = primals
    m, n = _qr_differentiable(a, full_matrices)
    q, r = la.qr(a, full_matrices=full_matrices)

    def backward(cts):
        if all(ct is None for ct in cts):
            return [None]
        q_bar, r_bar = _zeros_if_none(cts[0], q), _zeros_if_none(cts[1], r)
        if m >= n:
            return [_tall_qr_vjp(q, r, q_bar, r_bar)]
        (r1, _), (r1_bar, r2_bar) = _wide_split(r, m), _wide_split(r_bar, m)
        a2 = _columns(a, m, n)
        a1_bar = _tall_qr_vjp(q, r1, q_bar + la.matmul(a2, la.mT(r2_bar)), r1_bar)
        a2_bar = la.matmul(q, r2_bar)
        return [lax.concatenate([a1_bar, a2_bar], len(la.shape_of(a)) - 1)]

    return [q, r], backward


# --- eigh ------------------------------------------------------------------------------------


@JVP_RULES.rule(eigh_p)
def _eigh_jvp(primals, tangents):
    (a,), (a_dot,) = primals, tangents
    w, v = la.eigh(a)
    rotated = la.matmul(la.mT(v), la.matmul(_symmetric_of_lower(a_dot), v))
    v_dot = la.matmul(v, _inverse_gaps(w) * rotated)
    return [w, v], [la.diagonal(rotated), v_dot]


@VJP_RULES.rule(eigh_p)
def _eigh_vjp(primals, wrt):
    (a,) = primals
    w, v = la.eigh(a)

    def backward(cts):
        w_bar, v_bar = cts
        if w_bar is None and v_bar is None:
            return [None]
        inner = lax.zeros_like_aval(d.aval(v)) if w_bar is None else la.diag_matrix(w_bar)
        if v_bar is not None:
            inner = inner + _inverse_gaps(w) * la.matmul(la.mT(v), v_bar)
        g = la.matmul(v, la.matmul(inner, la.mT(v)))
        return [_lower_of_symmetric(g)]

    return [w, v], backward


# --- svd -------------------------------------------------------------------------------------


def _svd_differentiable(a, full_matrices, compute_uv):
    m, n = la.shape_of(a)[-2:]
    if full_matrices and compute_uv and m != n:
        raise GradientError(
            "svd: the derivative of full_matrices=True for a non-square matrix is not "
            "defined (u or vt has columns beyond the singular vectors, any orthonormal "
            "completion): use full_matrices=False"
        )
    return m, n


@JVP_RULES.rule(svd_p)
def _svd_jvp(primals, tangents, *, full_matrices, compute_uv):
    (a,), (a_dot,) = primals, tangents
    m, n = _svd_differentiable(a, full_matrices, compute_uv)
    u, s, vt = la.svd(a, full_matrices=False, compute_uv=True)
    v = la.mT(vt)
    ds = la.matmul(la.mT(u), la.matmul(a_dot, v))
    s_dot = la.diagonal(ds)
    if not compute_uv:
        return [s], [s_dot]
    gaps = _inverse_gaps(s * s)
    ds_s, s_ds = ds * la.row(s), la.column(s) * ds
    u_dot = la.matmul(u, gaps * (ds_s + la.mT(ds_s)))
    v_dot = la.matmul(v, gaps * (s_ds + la.mT(s_ds)))
    if m > n:  # the part of ȧ's column space outside u's
        a_dot_v = la.matmul(a_dot, v)
        u_dot = u_dot + (a_dot_v - la.matmul(u, la.matmul(la.mT(u), a_dot_v))) / la.row(s)
    if n > m:
        a_dot_t_u = la.matmul(la.mT(a_dot), u)
        v_dot = v_dot + (a_dot_t_u - la.matmul(v, la.matmul(vt, a_dot_t_u))) / la.row(s)
    return [u, s, vt], [u_dot, s_dot, la.mT(v_dot)]


@VJP_RULES.rule(svd_p)
def _svd_vjp(primals, wrt, *, full_matrices, compute_uv):
    (a,) = primals
    m, n = _svd_differentiable(a, full_matrices, compute_uv)
    u, s, vt = la.svd(a, full_matrices=False, compute_uv=True)
    outs = [u, s, vt] if compute_uv else [s]

    def backward(cts):
        u_bar, s_bar, vt_bar = cts if compute_uv else (None, cts[0], None)
        if u_bar is None and s_bar is None and vt_bar is None:
            return [None]
        inner = None if s_bar is None else la.diag_matrix(s_bar)
        gaps = _inverse_gaps(s * s)
        v = la.mT(vt)
        if u_bar is not None:
            j = gaps * la.matmul(la.mT(u), u_bar)
            inner = d.add(inner, (j + la.mT(j)) * la.row(s))
        if vt_bar is not None:
            k = gaps * la.matmul(vt, la.mT(vt_bar))
            inner = d.add(inner, la.column(s) * (k + la.mT(k)))
        a_bar = la.matmul(u, la.matmul(inner, vt))
        if u_bar is not None and m > n:
            outside = u_bar - la.matmul(u, la.matmul(la.mT(u), u_bar))
            a_bar = a_bar + la.matmul(outside / la.row(s), vt)
        if vt_bar is not None and n > m:
            scaled = vt_bar / la.column(s)
            a_bar = a_bar + la.matmul(u, scaled - la.matmul(la.matmul(scaled, v), vt))
        return [a_bar]

    return outs, backward


# --- the tables ------------------------------------------------------------------------------


def _stacked_rule(prim):
    """The batch dimension becomes the stack's first."""

    def rule(args, dims, **params):
        size = axis_size(args, dims)
        outs = bind(
            prim, *[to_front(x, dim, size) for x, dim in zip(args, dims, strict=True)], **params
        )
        outs = outs if prim.multiple_results else [outs]
        return outs, [0] * len(outs)

    return rule


for _prim in (cholesky_p, triangular_solve_p, lu_p, qr_p, eigh_p, svd_p):
    BATCH_RULES.rule(_prim.name)(_stacked_rule(_prim))
