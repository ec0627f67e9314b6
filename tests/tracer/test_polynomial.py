"""Polynomials, signals, cov/corrcoef and histograms against NumPy: values, dtypes and shapes
at the edges, derivatives against central differences, and every refusal. The corpus
(``corpus_polynomial.py``) runs a few of them on every backend."""

from __future__ import annotations

import numpy as np
import pytest
from tracer_util import assert_error, central_differences, jit

import numbax
from numbax import numpy as xnp

RNG = np.random.default_rng(0)
A, V = RNG.standard_normal(7), RNG.standard_normal(3)
AC, VC = A + 1j * RNG.standard_normal(7), V + 1j * RNG.standard_normal(3)
INTS, BOOLS = np.arange(5, dtype=np.int32), np.array([True, False, True])
X = np.sort(RNG.standard_normal(9))
Y = 1 + 2 * X - X**2 + 0.1 * RNG.standard_normal(9)
M = RNG.standard_normal((3, 6))
PHASES = np.cumsum(RNG.uniform(-3, 3, (3, 8)), axis=1)
SAMPLE = RNG.standard_normal((40, 3))
FWEIGHTS, AWEIGHTS = np.array([1, 2, 0, 3, 1, 1]), RNG.uniform(0.1, 2, 6)


def _assert_matches(got, want):
    got_leaves, got_tree = numbax.tree_flatten(got)
    want_leaves, want_tree = numbax.tree_flatten(want)
    assert got_tree == want_tree
    for g, w in zip(got_leaves, want_leaves, strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert (g.dtype, g.shape) == (w.dtype, w.shape)
        tol = 1e-5 if w.dtype in (np.float32, np.complex64) else 1e-12
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


def _modes(name, fn, *args):
    return [pytest.param(lambda *a, m=m: fn(*a, m), *args, id=f"{name}-{m}") for m in _MODE_NAMES]


_MODE_NAMES = ("full", "same", "valid", 2)
CALLS = [
    *_modes("convolve", np.convolve, A, V),
    *_modes("convolve_longer_second", np.convolve, V, A),
    *_modes("correlate", np.correlate, A, V),
    *_modes("correlate_longer_second", np.correlate, V, A),
    *_modes("correlate_even", np.correlate, A[:6], V[:2]),
    *_modes("correlate_even_longer_second", np.correlate, V[:2], A[:6]),
    *_modes("correlate_complex", np.correlate, VC, AC),
    pytest.param(np.convolve, INTS, INTS[:2], id="convolve-int"),
    pytest.param(np.convolve, BOOLS, BOOLS[:2], id="convolve-bool"),
    pytest.param(np.convolve, A.astype(np.float32), V, id="convolve-f32-f64"),
    pytest.param(np.convolve, np.float64(2.0), V, id="convolve-0d"),
    pytest.param(np.polyval, V, A, id="polyval"),
    pytest.param(np.polyval, INTS, A.astype(np.float32), id="polyval-int-coefficients"),
    pytest.param(np.polyval, V, np.float64(0.5), id="polyval-0d"),
    pytest.param(np.polyval, V[:0], A, id="polyval-no-coefficients"),
    pytest.param(np.polyadd, V, A, id="polyadd"),
    pytest.param(np.polyadd, A, INTS, id="polyadd-int"),
    pytest.param(np.polysub, V, INTS, id="polysub"),
    pytest.param(np.polymul, V, A, id="polymul"),
    pytest.param(lambda p: np.polyder(p, 2), A, id="polyder"),
    pytest.param(lambda p: np.polyder(p, 3), INTS, id="polyder-int"),
    pytest.param(lambda p: np.polyder(p, 0), INTS, id="polyder-0"),
    pytest.param(lambda p: np.polyder(p, 9), INTS, id="polyder-past-degree"),
    pytest.param(np.polyint, A, id="polyint"),
    pytest.param(lambda p: np.polyint(p, 2, k=[1, 2]), A.astype(np.float32), id="polyint-f32"),
    pytest.param(lambda p, k: np.polyint(p, 3, k=k), INTS, np.array([3.0]), id="polyint-one-k"),
    pytest.param(np.poly, A, id="poly"),
    pytest.param(np.poly, A.astype(np.float32), id="poly-f32"),
    pytest.param(np.poly, INTS, id="poly-int"),
    pytest.param(np.vander, A, id="vander"),
    pytest.param(lambda x: np.vander(x, 3, increasing=True), INTS, id="vander-increasing"),
    pytest.param(lambda x: np.vander(x, 4), BOOLS, id="vander-bool"),
    pytest.param(lambda x: np.vander(x, 0), A, id="vander-0"),
    pytest.param(lambda x: np.vander(x[:0]), A, id="vander-empty"),
    pytest.param(lambda x, y: np.polyfit(x, y, 2), X, Y, id="polyfit"),
    pytest.param(lambda x, y: np.polyfit(x, y, 2, w=np.abs(y)), X, Y, id="polyfit-w"),
    pytest.param(lambda x, y: np.polyfit(x, np.stack([y, 2 * y], 1), 3), X, Y, id="polyfit-2d"),
    pytest.param(lambda x, y: np.polyfit(x, y, 2, cov=True), X, Y, id="polyfit-cov"),
    pytest.param(
        lambda x, y: np.polyfit(x, np.stack([y, y * y], 1), 2, cov="unscaled"),
        X,
        Y,
        id="polyfit-cov-unscaled",
    ),
    pytest.param(lambda x, y: np.polyfit(x, y, 2)[::-1], X.astype(np.float32), Y, id="polyfit-f32"),
    pytest.param(np.trapezoid, M, id="trapezoid"),
    pytest.param(lambda y, x: np.trapezoid(y, x), M, np.sort(A[:6]), id="trapezoid-x"),
    pytest.param(lambda y, x: np.trapezoid(y, x, axis=0), M, A[:3], id="trapezoid-x-axis0"),
    pytest.param(lambda y: np.trapezoid(y, M * 2, axis=0), M, id="trapezoid-2d-x"),
    pytest.param(lambda y: np.trapezoid(y, dx=0.5, axis=0), M, id="trapezoid-dx"),
    pytest.param(np.trapezoid, INTS, id="trapezoid-int"),
    pytest.param(np.trapezoid, BOOLS, id="trapezoid-bool"),
    pytest.param(lambda y: np.trapezoid(y[:, :1]), M, id="trapezoid-one-sample"),
    pytest.param(np.ediff1d, M, id="ediff1d"),
    pytest.param(lambda y: np.ediff1d(y, to_end=[1, 2], to_begin=-3), M, id="ediff1d-ends"),
    pytest.param(lambda y: np.ediff1d(y, to_end=np.int64(7)), INTS, id="ediff1d-int"),
    pytest.param(lambda y: np.ediff1d(y[:0], to_begin=1.5), A, id="ediff1d-empty"),
    pytest.param(np.unwrap, PHASES, id="unwrap"),
    pytest.param(lambda p: np.unwrap(p, axis=0), PHASES, id="unwrap-axis0"),
    pytest.param(lambda p: np.unwrap(p, discont=4.0), PHASES, id="unwrap-discont"),
    pytest.param(lambda p: np.unwrap(p, period=5.0), PHASES, id="unwrap-period"),
    pytest.param(np.unwrap, np.array([0.0, np.pi, 0.0, -np.pi, 2 * np.pi]), id="unwrap-half"),
    pytest.param(
        lambda p: np.unwrap(p, period=6),
        np.array([0, 5, 2, 9, 3, 14], np.int32),
        id="unwrap-int-even-period",
    ),  # fmt: skip
    pytest.param(
        lambda p: np.unwrap(p, period=7),
        np.array([0, 5, 2, 9, 3, 1, 14]),
        id="unwrap-int-odd-period",
    ),  # fmt: skip
    pytest.param(np.i0, np.array([0, 0.5, -3, 7.9, 8, 8.1, 20, 700, np.nan, np.inf]), id="i0"),
    pytest.param(np.i0, np.array([0, 0.5, -3, 7.9, 8, 8.1, 20, 70], np.float32), id="i0-f32"),
    pytest.param(np.i0, INTS, id="i0-int"),
    pytest.param(np.i0, np.float64(3.0), id="i0-0d"),
    pytest.param(np.cov, M, id="cov"),
    pytest.param(np.cov, M[0], id="cov-1d"),
    pytest.param(lambda m, y: np.cov(m, y), M, M[1] * 2, id="cov-y"),
    pytest.param(lambda m, y: np.cov(m, y, rowvar=False), M.T, M[:2].T, id="cov-columns"),
    pytest.param(lambda m: np.cov(m, bias=True), M, id="cov-bias"),
    pytest.param(lambda m: np.cov(m, ddof=3), M, id="cov-ddof"),
    pytest.param(np.cov, np.arange(12, dtype=np.int32).reshape(3, 4) ** 2, id="cov-int"),
    pytest.param(np.cov, M.astype(np.float32), id="cov-f32"),
    pytest.param(lambda m: np.cov(m, dtype=np.float32), M.astype(np.float32), id="cov-dtype"),
    pytest.param(lambda m: np.cov(m, fweights=FWEIGHTS), M, id="cov-fweights"),
    pytest.param(lambda m, w: np.cov(m, aweights=w), M, AWEIGHTS, id="cov-aweights"),
    pytest.param(lambda m: np.cov(m, fweights=FWEIGHTS, aweights=AWEIGHTS), M, id="cov-both"),
    pytest.param(
        lambda m: np.cov(m, fweights=FWEIGHTS, aweights=AWEIGHTS, ddof=0), M, id="cov-both-ddof0"
    ),  # fmt: skip
    pytest.param(lambda m: np.cov(m, aweights=AWEIGHTS), M.astype(np.float32), id="cov-f32-w"),
    pytest.param(np.cov, M[:2] + 1j * M[1:], id="cov-complex"),
    pytest.param(np.cov, M[:0], id="cov-empty"),
    pytest.param(np.corrcoef, M, id="corrcoef"),
    pytest.param(np.corrcoef, M[0], id="corrcoef-1d"),
    pytest.param(lambda m, y: np.corrcoef(m, y), M[0], M[1], id="corrcoef-y"),
    pytest.param(np.corrcoef, M[:2] + 1j * M[1:], id="corrcoef-complex"),
    pytest.param(np.corrcoef, np.arange(12).reshape(3, 4) ** 2, id="corrcoef-int"),
    pytest.param(np.histogram_bin_edges, A, id="histogram_bin_edges"),
    pytest.param(lambda a: np.histogram_bin_edges(a, 5, range=(-1, 2)), A, id="bin_edges-range"),
    pytest.param(lambda a: np.histogram_bin_edges(a, [0, 1, 3]), A, id="bin_edges-edges"),
    pytest.param(lambda s: np.histogramdd(s, bins=(2, 3, 4)), SAMPLE, id="histogramdd"),
    pytest.param(
        lambda s: np.histogramdd(s, 3), np.round(SAMPLE * 2).astype(np.int64), id="histogramdd-int"
    ),  # fmt: skip
    pytest.param(
        lambda s: np.histogramdd(s, 3, range=[(0, 1), (-1, 1), None]),
        SAMPLE.astype(np.float32),
        id="histogramdd-f32-range",
    ),  # fmt: skip
    pytest.param(
        lambda s: np.histogramdd(s, (2, 3, 4), density=True), SAMPLE, id="histogramdd-density"
    ),  # fmt: skip
    pytest.param(
        lambda s, w: np.histogramdd(s, (2, 3, 2), weights=w),
        SAMPLE,
        SAMPLE[:, 0],
        id="histogramdd-weights",
    ),  # fmt: skip
    pytest.param(
        lambda s: np.histogramdd(s, [[-1, 0, 1], [0, 0.5, 2, 3], 2]), SAMPLE, id="histogramdd-edges"
    ),  # fmt: skip
    pytest.param(lambda s: np.histogramdd(s, 4), SAMPLE[:, 0], id="histogramdd-1d"),
    pytest.param(lambda s: np.histogramdd(s, 2), SAMPLE[:, :1] * 0 + 1, id="histogramdd-flat"),
    pytest.param(lambda x, y: np.histogram2d(x, y), A, A[::-1], id="histogram2d"),
    pytest.param(
        lambda x, y: np.histogram2d(x, y, [3, 4], density=True), A, A**2, id="histogram2d-density"
    ),  # fmt: skip
    pytest.param(
        lambda x, y: np.histogram2d(x, y, bins=[-1, 0, 0.5, 1]), A, A[::-1], id="histogram2d-edges"
    ),  # fmt: skip
    pytest.param(
        lambda x, y: np.histogram2d(x, y, 3, weights=np.arange(7)),
        A,
        A[::-1],
        id="histogram2d-int-weights",
    ),  # fmt: skip
    pytest.param(
        lambda x, y: np.histogram2d(x, y, [0, 1, 2]),
        np.array([0.0, 1, 2, 2, np.nan]),
        np.array([2.0, 2, 0, 1, 1]),
        id="histogram2d-last-edge-and-nan",
    ),  # fmt: skip
    pytest.param(lambda x, y: np.histogram2d(x, y, 2), A[:0], A[:0], id="histogram2d-empty"),
]


@pytest.mark.parametrize(("fn", "args"), [pytest.param(p.values[0], p.values[1:], id=p.id)
                                           for p in CALLS])  # fmt: skip
def test_matches_numpy(fn, args):
    with np.errstate(all="ignore"):
        want = fn(*args)
    _assert_matches(jit(fn)(*args), want)


# --------------------------------------------------------------- polydiv's remainder


def test_polydiv_remainder_trimmed_as_numpy_when_the_values_are_known():
    u, v = np.array([1.0, 0.0, 1.0, 1.0]), np.array([1.0, 0.0, 1.0])  # remainder x^0 only
    q, r = np.polydiv(u, v)
    assert r.shape == (1,)
    _assert_matches(numbax.jit(lambda: np.polydiv(u, v), backend="interpret")(), (q, r))
    grad = numbax.grad(lambda u: np.sum(np.polydiv(u, v)[1] * 3.0))(u)
    np.testing.assert_allclose(grad, [0.0, -3.0, 0.0, 3.0], atol=1e-12)


def test_polydiv_size_keeps_the_last_coefficients():
    u, v = np.array([2.0, 3.0, 1.0, 5.0]), np.array([1.0, 2.0])
    q, r = np.polydiv(u, v)
    got = jit(lambda u, v: xnp.polydiv(u, v, size=3))(u, v)
    _assert_matches(got, (q, np.concatenate([[0.0, 0.0], r])))
    _assert_matches(jit(lambda u, v: xnp.polydiv(u, v, size=1))(u, v), (q, r))
    small = jit(lambda u, v: xnp.polydiv(u, v, size=2))(v, u)  # a lower degree than v's
    _assert_matches(small, (np.array([0.0]), v))


def test_polydiv_of_traced_values_needs_size():
    fn = jit(lambda u, v: np.polydiv(u, v))
    assert_error(numbax.ConcretizationError, fn, A, V, says=["polydiv", "size="])


# --------------------------------------------------------------- derivatives, vmap


LOSSES = [
    pytest.param(lambda x: np.sum(np.convolve(x, V) ** 2), A, id="convolve"),
    pytest.param(lambda x: np.sum(np.sin(np.correlate(V, x, "same"))), A, id="correlate"),
    pytest.param(lambda p: np.sum(np.polyval(p, A)), V, id="polyval-p"),
    pytest.param(lambda x: np.sum(np.polyval(V, x)), A, id="polyval-x"),
    pytest.param(lambda x: np.sum(np.polymul(x, V) ** 2), A, id="polymul"),
    pytest.param(lambda y: np.trapezoid(y**2, np.cumsum(np.abs(y))), A, id="trapezoid"),
    pytest.param(lambda m: np.sum(np.cov(m, aweights=AWEIGHTS) ** 2), M, id="cov"),
    pytest.param(lambda m: np.sum(np.corrcoef(m) ** 3), M, id="corrcoef"),
    pytest.param(lambda y: np.sum(np.polyfit(X, y, 2) ** 2), Y, id="polyfit-y"),
    pytest.param(lambda x: np.sum(np.polyfit(x, Y, 2) ** 2), X, id="polyfit-x"),
    pytest.param(
        lambda x: np.sum(np.i0(x) * np.array([1, 1, 1e-2, 1e-3, 1e-4, 1])),
        np.array([0.3, -2.0, 7.5, 8.5, 12.0, 0.0]),
        id="i0",
    ),  # fmt: skip
    pytest.param(lambda x: np.sum(np.vander(x, 4) * np.arange(4.0)), A, id="vander"),
    pytest.param(lambda x: np.sum(np.unwrap(x) ** 2), PHASES[0], id="unwrap"),
    pytest.param(lambda x: np.sum(np.poly(x)), A[:4], id="poly"),
    pytest.param(lambda u: np.sum(xnp.polydiv(u, V, size=2)[1] ** 2), A, id="polydiv"),
    pytest.param(
        lambda w: np.sum(np.histogram2d(A, -A, 3, weights=w)[0] ** 2), A, id="histogram2d-weights"
    ),  # fmt: skip
]


@pytest.mark.parametrize(("loss", "x"), [pytest.param(*p.values, id=p.id) for p in LOSSES])
def test_grad_matches_finite_differences(loss, x):
    got = jit(numbax.grad(loss))(x)
    np.testing.assert_allclose(got, central_differences(loss, x), rtol=1e-6, atol=1e-7)


def test_long_signals_are_convolved_by_a_loop_with_numpys_values():
    """Past a million window entries convolve/correlate loop over the shorter operand (the
    window matrix would take the memory of len(a) * len(v) entries)."""
    rng = np.random.default_rng(3)
    a, v = rng.standard_normal(2500), rng.standard_normal(450)
    for mode in ("full", "same", "valid"):
        for fn in (np.convolve, np.correlate):
            for x, y in ((a, v), (v, a)):
                got = jit(lambda p, q, fn=fn, mode=mode: fn(p, q, mode))(x, y)
                np.testing.assert_allclose(got, fn(x, y, mode), rtol=1e-10, atol=1e-10)
    loss = lambda p: np.sum(np.sin(np.convolve(p, v)))  # noqa: E731
    got = jit(numbax.grad(loss))(a)
    picked = [0, 7, 1200, 2499]
    step = np.zeros_like(a)
    for i in picked:
        step[:] = 0
        step[i] = 1e-6
        want = (loss(a + step) - loss(a - step)) / 2e-6
        np.testing.assert_allclose(got[i], want, rtol=1e-6, atol=1e-7)


def test_vmap_of_convolve_and_polyval():
    fn = jit(numbax.vmap(lambda x: (np.convolve(x, V, "same"), np.polyval(x, 0.5))))
    rows, values = fn(M)
    np.testing.assert_allclose(rows, [np.convolve(r, V, "same") for r in M], rtol=1e-12)
    np.testing.assert_allclose(values, [np.polyval(r, 0.5) for r in M], rtol=1e-12)


# --------------------------------------------------------------- refusals


REFUSALS = [
    pytest.param(
        numbax.ShapeError,
        lambda a: np.convolve(a[:0], V),
        ["convolve", "empty"],
        id="convolve-empty",
    ),  # fmt: skip
    pytest.param(numbax.ShapeError, lambda a: np.correlate(a, V, "middle"), ["mode"], id="mode"),
    pytest.param(numbax.ShapeError, lambda a: np.convolve(a, V, 3), ["mode"], id="mode-int"),
    pytest.param(
        numbax.ShapeError, lambda a: np.convolve(a.reshape(7, 1), V), ["convolve"], id="convolve-2d"
    ),  # fmt: skip
    pytest.param(numbax.NumbaxTypeError, lambda a: np.polyval(a[0], a), ["polyval"], id="0d-p"),
    pytest.param(numbax.ShapeError, lambda a: np.polyder(a, -1), ["polyder", "m"], id="polyder"),
    pytest.param(
        numbax.ShapeError, lambda a: np.polyint(a, 3, k=[1, 2]), ["polyint", "k"], id="polyint-k"
    ),  # fmt: skip
    pytest.param(
        numbax.UnsupportedFunctionError, lambda a: np.roots(a), ["roots", "eigh"], id="roots"
    ),  # fmt: skip
    pytest.param(
        numbax.UnsupportedFunctionError,
        lambda a: np.poly(a[:4].reshape(2, 2)),
        ["poly", "eigvals"],
        id="poly-matrix",
    ),  # fmt: skip
    pytest.param(
        numbax.ConcretizationError,
        lambda a: np.poly(a + 1j),
        ["poly", "conjugate"],
        id="poly-complex",
    ),  # fmt: skip
    pytest.param(numbax.ShapeError, lambda a: np.vander(a.reshape(7, 1)), ["vander"], id="vander"),
    pytest.param(
        numbax.ShapeError, lambda a: np.polyfit(a, a, -1), ["polyfit", "deg"], id="polyfit-deg"
    ),  # fmt: skip
    pytest.param(
        numbax.NumbaxTypeError,
        lambda a: np.polyfit(a, a[:3], 1),
        ["same length"],
        id="polyfit-lengths",
    ),  # fmt: skip
    pytest.param(
        numbax.ShapeError,
        lambda a: np.polyfit(a[:2], a[:2], 1, cov=True),
        ["exceed order"],
        id="polyfit-cov",
    ),  # fmt: skip
    pytest.param(
        numbax.NumbaxTypeError,
        lambda a: np.ediff1d(a.astype(int), to_end=0.5),
        ["ediff1d", "to_end", "same_kind"],
        id="ediff1d",
    ),  # fmt: skip
    pytest.param(numbax.NumbaxTypeError, lambda a: np.i0(a + 1j), ["i0", "complex"], id="i0"),
    pytest.param(
        numbax.ShapeError, lambda a: np.cov(a.reshape(7, 1, 1)), ["cov", "dimensions"], id="cov-3d"
    ),  # fmt: skip
    pytest.param(
        numbax.ShapeError,
        lambda a: np.cov(a, fweights=[1, 2]),
        ["fweights"],
        id="cov-fweights-length",
    ),  # fmt: skip
    pytest.param(
        numbax.ShapeError,
        lambda a: np.cov(a, aweights=-np.ones(7)),
        ["negative"],
        id="cov-negative",
    ),  # fmt: skip
    pytest.param(
        numbax.NumbaxTypeError,
        lambda a: np.cov(a, fweights=np.full(7, 0.5)),
        ["fweights", "integer"],
        id="cov-fractional",
    ),  # fmt: skip
    pytest.param(
        numbax.ConcretizationError,
        lambda a: np.histogram_bin_edges(a, "auto"),
        ["histogram_bin_edges", "'auto'"],
        id="bin-rule",
    ),  # fmt: skip
    pytest.param(
        numbax.ShapeError,
        lambda a: np.histogramdd(a, 0),
        ["bins[0]", "positive"],
        id="histogramdd-bins",
    ),  # fmt: skip
    pytest.param(
        numbax.NumbaxTypeError,
        lambda a: np.histogramdd(a, 2.5),
        ["integer"],
        id="histogramdd-float-bins",
    ),  # fmt: skip
    pytest.param(
        numbax.ShapeError,
        lambda a: np.histogramdd(a, [[1, 0]]),
        ["monotonically"],
        id="histogramdd-edges",
    ),  # fmt: skip
    pytest.param(
        numbax.ShapeError,
        lambda a: np.histogramdd(a, [2, 2]),
        ["dimension of bins"],
        id="histogramdd-dims",
    ),  # fmt: skip
    pytest.param(
        numbax.ShapeError,
        lambda a: np.histogram2d(a, a[:3]),
        ["same length"],
        id="histogram2d-lengths",
    ),  # fmt: skip
]


@pytest.mark.parametrize(("error", "fn", "says"), [pytest.param(*p.values, id=p.id)
                                                    for p in REFUSALS])  # fmt: skip
def test_refusals_name_the_function_and_the_line(error, fn, says):
    assert_error(error, jit(fn), A, says=says)


def test_a_string_bin_rule_is_followed_when_the_data_is_known():
    want = np.histogram_bin_edges(A, "auto")
    _assert_matches(jit(lambda: np.histogram_bin_edges(A, "auto"))(), want)


def test_cov_without_freedom_warns_and_is_infinite_as_numpy():
    with pytest.warns(RuntimeWarning, match="Degrees of freedom"):
        got = jit(lambda m: np.cov(m, ddof=6))(M)
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        _assert_matches(got, np.cov(M, ddof=6))
