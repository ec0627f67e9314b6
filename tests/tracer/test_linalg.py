"""numpy.linalg traced: values against NumPy on every backend (stacks, size-1 matrices,
ill-conditioned ones at a tolerance scaled by the condition number, singular ones),
derivatives against float64 central finite differences in both modes, ``vmap`` against
a Python loop, and the errors a user meets. The corpus (tests/corpus_linalg.py) runs the
same functions under every transform and pass."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from corpus import assert_tree_matches
from corpus_linalg import sign_fixed

import numbax
from numbax.ir.errors import GradientError, NumbaxTypeError, ShapeError, UnsupportedFunctionError

sys.path.insert(0, str(Path(__file__).parent.parent / "transforms"))
from finite_differences import check_derivatives  # noqa: E402

EPS = {np.float32: np.finfo(np.float32).eps, np.float64: np.finfo(np.float64).eps}


def _run(backend, fn, *args):
    return backend.to_host(numbax.jit(fn, backend=backend)(*args))


def _well_conditioned(rng, shape, dtype=np.float64):
    n = shape[-1]
    return (rng.standard_normal(shape) + 2.0 * n * np.eye(n)).astype(dtype)


def _with_condition(rng, n: int, condition: float) -> np.ndarray:
    """A random n x n matrix with exactly this 2-norm condition number."""
    u, _ = np.linalg.qr(rng.standard_normal((n, n)))
    v, _ = np.linalg.qr(rng.standard_normal((n, n)))
    return (u * np.logspace(0, -np.log10(condition), n)) @ v.T


def _factorizations(a):
    spd = a @ np.swapaxes(a, -1, -2) + np.eye(a.shape[-1], dtype=a.dtype)
    w, v = np.linalg.eigh(spd)
    u, s, vt = np.linalg.svd(a)
    v, (u, vt) = sign_fixed(v), sign_fixed(u, vt)  # unique up to signs LAPACK builds choose
    q, r = np.linalg.qr(a)
    sign, logabsdet = np.linalg.slogdet(a)
    return {
        "solve": np.linalg.solve(a, a[..., :1]),
        "inv": np.linalg.inv(a),
        "det": np.linalg.det(a),
        "slogdet": (sign, logabsdet),
        "cholesky": np.linalg.cholesky(spd),
        "eigh": (w, v),
        "svd": (u, s, vt),
        "qr": (q, r),
    }


@pytest.mark.parametrize("shape", [(1, 1), (2, 3, 3), (2, 1, 4, 4), (0, 2, 2)], ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: d.__name__)
def test_stacks_and_size_one_matrices_match_numpy(backend, shape, dtype, rng):
    a = _well_conditioned(rng, shape, dtype)
    assert_tree_matches(_run(backend, _factorizations, a), _factorizations(a), 1000.0)


@pytest.mark.parametrize("shape", [(3, 0), (0, 2), (2, 0, 0)], ids=str)
def test_empty_matrices_match_numpy(backend, shape, rng):
    def program(a):
        return np.linalg.svd(a), np.linalg.qr(a, mode="complete"), np.linalg.pinv(a)

    a = np.zeros(shape)
    assert_tree_matches(_run(backend, program, a), program(a))


def test_stacks_broadcast_as_numpy(backend, rng):
    a = _well_conditioned(rng, (2, 1, 3, 3))
    b = rng.standard_normal((4, 3, 2))
    expected = np.linalg.solve(a, b)
    assert_tree_matches(_run(backend, np.linalg.solve, a, b), expected, 100.0)


@pytest.mark.parametrize("condition", [1e2, 1e6, 1e10], ids=lambda c: f"cond{c:.0e}")
def test_ill_conditioned_matrices_within_their_condition_number(backend, condition, rng):
    n = 6
    a = _with_condition(rng, n, condition)
    b = rng.standard_normal((n, 2))
    spd = a @ a.T + 1e-3 * np.eye(n)

    def program(a, b, spd):
        sign, logabsdet = np.linalg.slogdet(a)
        return (
            np.linalg.solve(a, b),
            np.linalg.inv(a),
            logabsdet,
            np.linalg.eigvalsh(spd),
            np.linalg.svd(a, compute_uv=False),
            np.linalg.cholesky(spd),
        )

    x, inverse, logabsdet, w, s, lower = _run(backend, program, a, b, spd)
    # Backward-stable algorithms: a forward error of (condition number) x eps, per NumPy.
    bound = 10 * n * condition * EPS[np.float64]
    for got, want in [(x, np.linalg.solve(a, b)), (inverse, np.linalg.inv(a))]:
        assert np.linalg.norm(got - want) <= bound * np.linalg.norm(want)
    assert abs(logabsdet - np.linalg.slogdet(a)[1]) <= bound
    # Eigenvalues and singular values: an absolute error of eps times the norm.
    scale = 10 * n * EPS[np.float64]
    assert np.max(np.abs(w - np.linalg.eigvalsh(spd))) <= scale * np.linalg.norm(spd, 2)
    assert np.max(np.abs(s - np.linalg.svd(a, compute_uv=False))) <= scale
    assert np.linalg.norm(lower @ lower.T - spd) <= scale * np.linalg.norm(spd)


def test_singular_matrices_give_numpy_det_and_nans_where_numpy_raises(backend):
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    indefinite = np.array([[1.0, 2.0], [2.0, 1.0]])

    def program(a, b):
        return (
            np.linalg.det(a),
            np.linalg.slogdet(a),
            np.linalg.solve(a, a[:, 0]),
            (np.linalg.cholesky(b)),
        )

    det, (sign, logabsdet), x, lower = _run(backend, program, singular, indefinite)
    assert det == np.linalg.det(singular) == 0.0
    assert (sign, logabsdet) == (0.0, -np.inf) == tuple(np.linalg.slogdet(singular))
    assert not np.all(np.isfinite(x))  # NumPy raises LinAlgError here
    assert np.all(np.isnan(lower))  # NumPy raises LinAlgError here


def test_lstsq_of_a_rank_deficient_matrix_is_the_minimum_norm_solution(backend, rng):
    a = rng.standard_normal((5, 2)) @ rng.standard_normal((2, 3))  # rank 2
    b = rng.standard_normal(5)
    x, residuals, rank, s = _run(backend, np.linalg.lstsq, a, b)
    x_np, _, rank_np, s_np = np.linalg.lstsq(a, b)
    np.testing.assert_allclose(x, x_np, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(s, s_np, rtol=1e-10, atol=1e-12)
    assert rank == rank_np and rank.dtype == np.int32
    # NumPy returns no residuals below full rank (a shape known only at run time): numbax
    # returns the squared norm of the residual, whose shape is static.
    np.testing.assert_allclose(residuals, [np.sum((a @ x_np - b) ** 2)], rtol=1e-10)


# --- derivatives: forward and reverse against central finite differences in float64 ------


def _matrix(rng, n=3, batch=()):
    return rng.standard_normal((*batch, n, n)) + 0.5 * n * np.eye(n)


DERIVATIVES = {
    "slogdet": (lambda a: np.linalg.slogdet(a)[1], lambda rng: [_matrix(rng, 4, (2,))]),
    "det": (np.linalg.det, lambda rng: [_matrix(rng, 3)]),
    "solve": (np.linalg.solve, lambda rng: [_matrix(rng, 3, (2,)), rng.standard_normal((2, 3, 2))]),
    "inv": (np.linalg.inv, lambda rng: [_matrix(rng, 3)]),
    "cholesky": (
        lambda a: np.linalg.cholesky(a @ a.T + np.tril(a)),
        lambda rng: [_matrix(rng, 3)],
    ),
    "eigh_eigenvalues": (
        lambda a: np.linalg.eigh(a)[0],
        lambda rng: [rng.standard_normal((2, 4, 4))],
    ),
    "eigh_eigenvectors": (
        lambda a: np.linalg.eigh(a)[1],
        lambda rng: [rng.standard_normal((3, 3))],
    ),
    "svd_singular_values": (
        lambda a: np.linalg.svd(a, compute_uv=False),
        lambda rng: [rng.standard_normal((2, 4, 3))],
    ),
    "svd_vectors": (
        lambda a: np.linalg.svd(a, full_matrices=False),
        lambda rng: [rng.standard_normal((3, 5))],
    ),
    "qr": (np.linalg.qr, lambda rng: [rng.standard_normal((4, 3))]),
    "norm_nuc": (lambda a: np.linalg.norm(a, "nuc"), lambda rng: [rng.standard_normal((3, 4))]),
    "norm_2": (
        lambda a: np.linalg.norm(a, 2, axis=(0, 1)),
        lambda rng: [rng.standard_normal((3, 4))],
    ),
    "norm_vector": (
        lambda a: np.linalg.norm(a, 3, axis=0),
        lambda rng: [rng.standard_normal((3, 4))],
    ),
    "pinv": (np.linalg.pinv, lambda rng: [rng.standard_normal((4, 2))]),
    "matrix_power": (
        lambda a: np.linalg.matrix_power(a, -3),
        lambda rng: [_matrix(rng, 3)],
    ),
    "solve_on_a_cholesky_factor": (
        lambda a, b: _solves_on_factor(np.linalg.cholesky(a @ a.T + 3 * np.eye(3)), b),
        lambda rng: [rng.standard_normal((3, 3)), rng.standard_normal((3, 2))],
    ),
    "cho_solve": (
        lambda a, b: numbax.scipy.linalg.cho_solve(
            (np.linalg.cholesky(a @ a.T + 3 * np.eye(3)), True), b
        ),
        lambda rng: [rng.standard_normal((3, 3)), rng.standard_normal((3, 2))],
    ),
}


def _solves_on_factor(factor, b):
    """A Gaussian process's solves: on a Cholesky factor and on its transpose, a vector
    right-hand side and a matrix one."""
    transposed = np.swapaxes(factor, -1, -2)
    solved = (np.linalg.solve(factor, b), np.linalg.solve(transposed, b))
    if factor.ndim == 2:  # a vector right-hand side, and ``.T``
        solved += (np.linalg.solve(factor, b[:, 0]), np.linalg.solve(factor.T, b[:, 0]))
    return solved


@pytest.mark.parametrize("batch", [(), (2,)])
def test_solve_on_a_cholesky_factor_is_one_triangular_solve(backend, batch, rng):
    """``solve`` of a Cholesky factor or its transpose, triangular by construction, is one
    triangular solve (no LU) with NumPy's values; a factor written into since is any
    matrix again (an LU)."""
    a = rng.standard_normal((*batch, 4, 4))
    spd = a @ np.swapaxes(a, -1, -2) + 4 * np.eye(4)
    b = rng.standard_normal((*batch, 4, 3))

    def on_factor(spd, b):
        return _solves_on_factor(np.linalg.cholesky(spd), b)

    def written_into(spd, b):
        factor = np.linalg.cholesky(spd)
        factor[..., 0, 3] = 0.5  # no longer triangular
        return np.linalg.solve(factor, b), np.linalg.solve(np.swapaxes(factor, -1, -2), b)

    for fn, lus in ((on_factor, 0), (written_into, 2)):
        names = [eqn.prim.name for eqn in numbax.make_jaxpr(fn)(spd, b).jaxpr.eqns]
        assert names.count("lu") == lus
        assert_tree_matches(_run(backend, fn, spd, b), fn(spd.copy(), b))


def _scipy_cho_solve(a, b):
    import scipy.linalg

    return scipy.linalg.cho_solve((np.linalg.cholesky(a @ a.T + 3 * np.eye(3)), True), b)


@pytest.mark.parametrize("name", sorted(DERIVATIVES))
def test_derivatives_match_finite_differences(name, rng):
    fn, make = DERIVATIVES[name]
    reference = _scipy_cho_solve if name == "cho_solve" else None
    check_derivatives(fn, make(rng), rng, rtol=1e-6, reference=reference)


def test_grad_of_log_det_is_the_inverse_transpose(rng):
    a = _matrix(rng, 4)
    grad = numbax.grad(lambda a: np.linalg.slogdet(a)[1])(a)
    np.testing.assert_allclose(grad, np.linalg.inv(a).T, rtol=1e-10)


def test_grad_of_a_cholesky_ignores_the_upper_triangle(rng):
    a = _matrix(rng, 3)
    spd = a @ a.T + np.eye(3)
    grad = numbax.grad(lambda m: np.sum(np.linalg.cholesky(m)))(spd)
    assert np.all(grad[np.triu_indices(3, 1)] == 0.0)


# --- vmap ----------------------------------------------------------------------------------


def _per_example(a, b):
    spd = a @ a.T + 3.0 * np.eye(3)
    w, v = np.linalg.eigh(spd)
    return (
        np.linalg.solve(a + 6.0 * np.eye(3), b),
        np.linalg.slogdet(a)[1],
        np.linalg.cholesky(spd),
        w,
        np.abs(v),
        np.linalg.svd(a, compute_uv=False),
        np.linalg.norm(a, "nuc"),
        np.abs(np.linalg.qr(a)[1]),
        numbax.scipy.linalg.solve_triangular(spd, b, lower=True),
    )


@pytest.mark.parametrize("in_axes", [(0, 0), (2, None), (None, 1)], ids=str)
def test_vmap_matches_a_python_loop(in_axes, rng):
    size = 4
    a, b = (
        rng.standard_normal((3, 3) if axis is None else (3, 3)[:axis] + (size,) + (3, 3)[axis:])
        for axis in in_axes
    )

    def example(x, axis, i):
        return x if axis is None else np.take(x, i, axis)

    batched = numbax.vmap(_per_example, in_axes=in_axes)(a, b)
    examples = [
        _per_example(example(a, in_axes[0], i), example(b, in_axes[1], i)) for i in range(size)
    ]
    expected = numbax.tree_map(lambda *xs: np.stack(xs), *examples)
    assert_tree_matches(batched, expected, 1000.0)


# --- errors --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("program", "argument", "error", "match"),
    [
        (np.linalg.inv, np.ones((2, 3)), ShapeError, "must be square"),
        (np.linalg.det, np.ones(3), ShapeError, "at least two-dimensional"),
        (lambda a: np.linalg.qr(a, mode="raw"), np.ones((3, 2)), UnsupportedFunctionError, "raw"),
        (lambda a: np.linalg.solve(a, a[0, :1]), np.eye(2), ShapeError, "does not match"),
        (lambda a: np.linalg.matrix_power(a, 1.5), np.eye(2), NumbaxTypeError, "integer"),
    ],
    ids=["non_square", "vector", "qr_raw", "solve_shapes", "power"],
)
def test_bad_input_is_refused_by_name(program, argument, error, match):
    with pytest.raises(error, match=match):
        numbax.jit(program)(argument)


@pytest.mark.parametrize(
    "program",
    [
        lambda a: np.sum(np.linalg.qr(a, mode="complete")[0]),
        lambda a: np.sum(np.linalg.svd(a)[0]),
    ],
    ids=["qr_complete", "svd_full_matrices"],
)
def test_undefined_derivatives_of_complete_factors_are_refused(program, rng):
    with pytest.raises(GradientError, match="not defined"):
        numbax.grad(program)(rng.standard_normal((4, 2)))


def test_scipy_namespace_imports_by_name():
    import numbax.scipy.linalg as linalg

    assert linalg.solve_triangular is numbax.scipy.linalg.solve_triangular
    assert numbax.numpy.linalg.solve is not None


# --- the backends' mechanisms these programs reached first ---------------------------------


def test_take_of_a_literal_index_compiles(backend):
    # A gather whose index is a literal (``np.take(x, 0)``): the cpu backend indexed the
    # scalar constant as if it were an array.
    x = np.arange(6.0).reshape(2, 3)
    got = _run(backend, lambda x: (np.take(x, 0, axis=-1), np.take(x, 2, axis=1)), x)
    assert_tree_matches(got, (x[:, 0], x[:, 2]))


def test_a_host_step_reads_a_reshaped_operand_in_its_own_shape(backend, rng):
    # On cuda the solve's permuted right-hand side reaches the triangular solve through a
    # reshape, which the backend dropped: the host step then read it as (2 * 3, 2).
    a = _well_conditioned(rng, (2, 3, 3))
    b = rng.standard_normal((2, 3, 2))
    assert_tree_matches(_run(backend, np.linalg.solve, a, b), np.linalg.solve(a, b), 100.0)


_U = np.array([[1 + 2j, 3 - 1j], [2j, -1 + 0.5j]])
_V = np.array([[2 - 1j, 1 + 1j], [1 - 3j, 2j]])
_PRODUCTS = "vdot vdot_flattens vdot_real_first vdot_real_second inner dot vecdot vecmat matvec"


@pytest.mark.parametrize(
    ("program", "arguments"),
    [
        (np.vdot, (_U[0], _V[0])),  # NumPy: (7-4j), not the unconjugated (7+4j)
        (np.vdot, (_U, _V)),  # flattens both
        (np.vdot, (_U.real, _V)),
        (np.vdot, (_U, _V.T.real)),
        (np.inner, (_U, _V)),  # no conjugation
        (np.dot, (_U, _V)),
        (np.vecdot, (_U, _V)),  # conjugates its first vector
        (np.vecmat, (_U[1], _V)),
        (np.matvec, (_U, _V[0])),
    ],
    ids=_PRODUCTS.split(),
)
def test_complex_products_conjugate_as_numpy_does(backend, program, arguments):
    want = program(*arguments)
    got = _run(backend, program, *arguments)
    np.testing.assert_allclose(got, want, rtol=1e-14)
    assert np.asarray(got).dtype == np.asarray(want).dtype


def test_vdot_of_different_sizes_is_refused_by_name():
    with pytest.raises(ShapeError, match="vdot(.|\n)*sizes differ(.|\n)*test_linalg"):
        numbax.jit(np.vdot)(np.ones(3), np.ones(4))
