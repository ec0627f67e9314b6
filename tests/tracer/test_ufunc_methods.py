"""NumPy's ufunc methods, einsum in all its forms, and ramps with traced endpoints,
against NumPy; derivatives against central finite differences in float64."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import numbax
from numbax import numpy as xnp
from numbax.ir.dtypes import canonicalize
from numbax.ir.errors import (
    ConcretizationError,
    InPlaceUpdateError,
    ShapeError,
    UnsupportedFunctionError,
)

sys.path.insert(0, str(Path(__file__).parent.parent / "transforms"))
from finite_differences import check_derivatives  # noqa: E402


def _same(actual, expected, rtol=1e-12):
    """Same dtype (NumPy's int8 loops of bools included) and values; the cuda backend's
    results are device arrays."""
    expected = np.asarray(expected)
    actual = actual.copy_to_host() if hasattr(actual, "copy_to_host") else actual
    assert isinstance(actual, np.ndarray)
    assert actual.dtype == canonicalize(expected.dtype), (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol)


def _same_each(labels, actuals, expecteds, rtol=1e-12):
    """``_same`` on each result of a program that computes several small cases, naming
    the failing case. (Measured: a dozen one-kernel cases compile in one program in
    about two thirds of the time they take apart; programs of many larger kernels, such
    as all of REDUCE at once, compile slower than apart: those keep a program each.)"""
    for label, actual, expected in zip(labels, actuals, expecteds, strict=True):
        try:
            _same(actual, expected, rtol)
        except AssertionError as error:
            raise AssertionError(f"{label}: {error}") from None


# ------------------------------------------------------------------ the Ufunc objects


@pytest.mark.parametrize("name", ["add", "sin", "maximum", "logical_and", "arctan2", "hypot"])
def test_numbax_numpy_ufuncs_keep_numpys_attributes(name):
    ufunc, numpy_ufunc = getattr(xnp, name), getattr(np, name)
    assert (ufunc.__name__, ufunc.nin, ufunc.nout) == (name, numpy_ufunc.nin, numpy_ufunc.nout)
    assert ufunc.identity == numpy_ufunc.identity
    for method in ("outer", "reduce", "accumulate", "at", "reduceat"):
        assert callable(getattr(ufunc, method))


def test_aliases_are_the_same_ufunc_object():
    assert xnp.abs is xnp.absolute and xnp.bitwise_not is xnp.invert


# ------------------------------------------------------------------ outer

OUTER = ["add", "subtract", "multiply", "maximum", "arctan2", "greater", "logaddexp", "power"]


@pytest.mark.parametrize("name", OUTER)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_outer_matches_numpy(name, dtype, rng):
    a = rng.uniform(0.5, 2.0, (2, 3)).astype(dtype)
    b = rng.uniform(0.5, 2.0, (4,)).astype(dtype)
    ufunc = getattr(np, name)
    _same(numbax.jit(ufunc.outer)(a, b), ufunc.outer(a, b), 1e-6)
    _same(numbax.jit(getattr(xnp, name).outer)(a, b), ufunc.outer(a, b), 1e-6)


def test_outer_of_a_scalar_and_of_a_unary_ufunc():
    _same(
        numbax.jit(lambda x: np.add.outer(2.0, x))(np.arange(3.0)),
        np.add.outer(2.0, np.arange(3.0)),
    )
    with pytest.raises(ValueError, match="only supported for binary"):
        numbax.jit(lambda x: np.sin.outer(x, x))(np.ones(2))  # NumPy's own check
    with pytest.raises(ShapeError, match="only supported for binary"):
        numbax.jit(lambda x: xnp.sin.outer(x, x))(np.ones(2))


# ------------------------------------------------------------------ reduce

REDUCE = [
    ("add", {}),
    ("add", {"axis": None, "keepdims": True}),
    ("add", {"axis": (0, 2), "initial": 2.5}),
    ("add", {"axis": 1, "where": "mask"}),
    ("multiply", {"axis": -1}),
    ("maximum", {"axis": 1}),
    ("maximum", {"axis": 0, "where": "mask", "initial": -5.0}),
    ("minimum", {"axis": (0, 1)}),
    ("subtract", {"axis": 1}),
    ("subtract", {"axis": 0, "initial": 1.0}),
    ("subtract", {"axis": 2, "where": "mask", "initial": 0.5}),
    ("divide", {"axis": 0}),
    ("arctan2", {"axis": 1}),
    ("logaddexp", {"axis": (1, 2)}),
    ("hypot", {"axis": 0}),
    ("fmax", {"axis": 2}),
    ("add", {"axis": 1, "dtype": np.float32}),
]


@pytest.mark.parametrize(("name", "kwargs"), REDUCE, ids=[f"{n}-{k}" for n, k in REDUCE])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_reduce_matches_numpy(name, kwargs, dtype, rng):
    x = rng.uniform(0.5, 1.5, (3, 4, 5)).astype(dtype)
    mask = rng.random((4, 5)) < 0.6
    ufunc = getattr(np, name)

    def reduced(x, mask):
        return ufunc.reduce(x, **{k: (mask if v == "mask" else v) for k, v in kwargs.items()})

    _same(numbax.jit(reduced)(x, mask), reduced(x, mask), 1e-5)


INTEGER_REDUCE = [
    ("bitwise_and", 0), ("bitwise_or", 1), ("bitwise_xor", None), ("logical_xor", 1),
    ("logical_and", 0), ("logical_or", 1), ("add", 0), ("subtract", 1), ("multiply", 1),
    ("left_shift", 1), ("maximum", None), ("equal", 1),
]  # fmt: skip


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.bool_])
def test_reduce_of_integers_and_bools_matches_numpy(dtype, rng):
    """What NumPy refuses (a TypeError) numbax refuses while tracing; the rest of
    INTEGER_REDUCE in one program."""
    x = rng.integers(0, 4, (3, 4)).astype(dtype)
    accepted, expected = [], []
    for name, axis in INTEGER_REDUCE:
        ufunc = getattr(np, name)
        try:
            expected.append(ufunc.reduce(x, axis=axis))
        except TypeError:
            with pytest.raises(TypeError):
                numbax.jit(lambda x, ufunc=ufunc, axis=axis: ufunc.reduce(x, axis=axis))(x)
            continue
        accepted.append((name, axis))

    def reduced(x):
        return [getattr(np, name).reduce(x, axis=axis) for name, axis in accepted]

    _same_each(accepted, numbax.jit(reduced)(x), expected)


def test_reduce_starts_from_the_identity_as_numpy_does():
    x = np.array([[-2.0], [3.0]])
    _same(numbax.jit(lambda x: np.hypot.reduce(x, axis=1))(x), np.hypot.reduce(x, axis=1))


def test_reduce_of_empty_axes_and_numpys_refusals():
    empty = np.ones((0, 3))
    _same(numbax.jit(lambda x: np.add.reduce(x))(empty), np.add.reduce(empty))
    _same(numbax.jit(lambda x: np.bitwise_and.reduce(x, axis=1))(np.ones((2, 0), np.int32)),
          np.bitwise_and.reduce(np.ones((2, 0), np.int32), axis=1))  # fmt: skip
    _same(numbax.jit(lambda x: np.subtract.reduce(x, initial=4.0))(empty),
          np.subtract.reduce(empty, initial=4.0))  # fmt: skip
    with pytest.raises(ShapeError, match="no identity"):
        numbax.jit(lambda x: np.subtract.reduce(x))(empty)
    with pytest.raises(ShapeError, match="not reorderable"):
        numbax.jit(lambda x: np.subtract.reduce(x, axis=(0, 1)))(np.ones((2, 2)))
    with pytest.raises(ShapeError, match="specify 'initial'"):
        numbax.jit(lambda x: np.maximum.reduce(x, where=x > 0))(np.ones(3))
    with pytest.raises(ShapeError, match="only supported for binary"):
        numbax.jit(lambda x: xnp.sin.reduce(x))(np.ones(3))


def test_reduce_out_is_written_through_numpy_and_refused_by_name_in_numbax_numpy():
    def written(x):
        out = np.zeros(4)
        np.subtract.reduce(x, axis=0, out=out)
        return out

    x = np.arange(12.0).reshape(3, 4)
    _same(numbax.jit(written)(x), written(x))
    with pytest.raises(UnsupportedFunctionError, match="out="):
        numbax.jit(lambda x: xnp.add.reduce(x, out=x))(x)


# ------------------------------------------------------------------ accumulate

ACCUMULATE = ["add", "multiply", "maximum", "minimum", "subtract", "divide", "logaddexp",
              "hypot", "arctan2", "fmin"]  # fmt: skip


@pytest.mark.parametrize("name", ACCUMULATE)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_accumulate_matches_numpy(name, dtype, axis, rng):
    x = rng.uniform(0.5, 1.5, (5, 7)).astype(dtype)
    ufunc = getattr(np, name)
    _same(numbax.jit(lambda x: ufunc.accumulate(x, axis=axis))(x), ufunc.accumulate(x, axis), 1e-5)


@pytest.mark.parametrize("name", ["add", "bitwise_xor", "subtract", "logical_or", "multiply"])
def test_accumulate_of_integers_and_empty_axes(name, rng):
    ufunc = getattr(np, name)
    for x in (rng.integers(-3, 4, (3, 6)).astype(np.int32), np.ones((0, 2), np.int64)):
        _same(numbax.jit(lambda x: ufunc.accumulate(x))(x), ufunc.accumulate(x))
    with pytest.raises(TypeError, match="scalar"):
        numbax.jit(lambda x: ufunc.accumulate(x))(np.int64(3))


# ------------------------------------------------------------------ reduceat


@pytest.mark.parametrize("name", ["add", "multiply", "maximum", "subtract", "hypot"])
@pytest.mark.parametrize("indices", [[0, 2, 1, 4], [3], [0, 1, 2, 3, 4, 5], [5, 0]])
def test_reduceat_matches_numpy(name, indices, rng):
    x = rng.uniform(0.5, 1.5, (6, 3))
    ufunc = getattr(np, name)
    _same(numbax.jit(lambda x: ufunc.reduceat(x, indices))(x), ufunc.reduceat(x, indices))
    _same(numbax.jit(lambda x: ufunc.reduceat(x.T, indices, axis=1))(x),
          ufunc.reduceat(x.T, indices, axis=1))  # fmt: skip


def test_reduceat_refuses_out_of_range_and_traced_indices():
    with pytest.raises(IndexError, match="out-of-bounds"):
        numbax.jit(lambda x: np.add.reduceat(x, [0, 7]))(np.ones(3))
    with pytest.raises(ConcretizationError, match="static"):
        numbax.jit(lambda x, i: np.add.reduceat(x, i))(np.ones(3), np.array([0, 1]))


# ------------------------------------------------------------------ at


def _all_at(x, i, v):
    y = x.copy()
    np.add.at(y, i, v)
    np.subtract.at(y, i, 0.5 * v)
    np.multiply.at(y, i, 1.25)
    np.maximum.at(y, i[:2], v[:2])
    np.minimum.at(y, i, 3.0)
    np.divide.at(y, i, 2.0)
    np.power.at(y, i, 2.0)
    np.negative.at(y, i)
    return y


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_at_matches_numpy_with_repeated_indices(dtype, backend, rng):
    x = rng.uniform(0.5, 1.5, 5).astype(dtype)
    i = np.array([0, 3, 3, -1, 0, 3])
    v = rng.uniform(0.5, 1.5, 6).astype(dtype)
    _same(numbax.jit(_all_at, backend=backend)(x, i, v), _all_at(x, i, v), 1e-5)


def test_at_writes_into_the_jitted_functions_argument_and_through_numbax_numpy():
    def add_at(x, i):
        np.add.at(x, i, 1)
        xnp.multiply.at(x, i, 2)

    x, expected = np.arange(4), np.arange(4)
    add_at(expected, [1, 1, 3])
    numbax.jit(add_at)(x, np.array([1, 1, 3]))
    np.testing.assert_array_equal(x, expected)
    outside = np.arange(3.0)
    xnp.add.at(outside, [0, 0], 1.0)  # outside a trace: NumPy's own, in place
    np.testing.assert_array_equal(outside, [2.0, 1.0, 2.0])


def test_at_with_a_mixed_dtype_casts_after_each_step_as_numpy_does():
    def at(x):
        y = x.copy()
        np.add.at(y, [0, 0, 1], -0.6)
        return y

    x = np.array([1, 1, 1])
    np.testing.assert_array_equal(numbax.jit(at)(x), at(x))


def test_at_of_a_multi_dimensional_index_and_of_traced_indices(rng):
    def at(x, i, v):
        y = x.copy()
        np.add.at(y, (i, slice(None)), v)
        np.hypot.at(y, (i, 0), v[:, 0])
        return y

    x, v = rng.standard_normal((3, 4)), rng.standard_normal((5, 4))
    i = np.array([2, 0, 2, 2, 1])
    _same(numbax.jit(at)(x, i, v), at(x, i, v))


def test_at_refuses_what_numpy_refuses_and_outside_arrays():
    with pytest.raises(IndexError, match="out of bounds"):
        numbax.jit(lambda x: np.add.at(x, [5], 1.0))(np.ones(3))
    outside = np.ones(3)
    with pytest.raises(InPlaceUpdateError, match="cannot hold them"):
        numbax.jit(lambda v: np.add.at(outside, [0], v))(np.float64(1.0))


def test_grad_through_at():
    def loss(x, v):
        y = x.copy()
        np.add.at(y, [0, 2, 2], v)
        np.multiply.at(y, [1, 2], v[:2])
        np.power.at(y, [0, 0], 2.0)
        return (y * y).sum()

    rng = np.random.default_rng(1)
    check_derivatives(loss, [rng.standard_normal(3), rng.standard_normal(3)], rng)


# ------------------------------------------------------------------ einsum

EINSUM = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("ba", [(3, 4)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("iii->i", [(3, 3, 3)]),
    ("ijji->ij", [(2, 3, 3, 2)]),
    ("iij,jk->ik", [(3, 3, 2), (2, 4)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("...ij,...jk", [(2, 3, 4), (4, 5)]),
    ("i...->...", [(3, 2, 2)]),
    ("...ii->...i", [(2, 3, 3)]),
    ("...,...", [(), (2, 3)]),
    ("ij,ij->ij", [(3, 1), (3, 4)]),
    ("ij,kj->ik", [(1, 4), (3, 1)]),
    ("bij,bjk,bkl->bil", [(2, 3, 4), (2, 4, 5), (2, 5, 3)]),
    ("ab,bc,cd,de->ae", [(2, 3), (3, 4), (4, 5), (5, 2)]),
    ("i,j,k->ijk", [(2,), (3,), (4,)]),
    ("ij,kl->", [(2, 3), (4, 5)]),
    ("ij,jk->ik", [(2, 0), (0, 3)]),
    ("i,i", [(0,), (0,)]),
    ("aBc,cB->a", [(2, 3, 4), (4, 3)]),
]


@pytest.mark.parametrize(("subscripts", "shapes"), EINSUM, ids=[s for s, _ in EINSUM])
@pytest.mark.parametrize("optimize", [False, "greedy", "optimal"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_einsum_matches_numpy(subscripts, shapes, optimize, dtype, rng):
    operands = [rng.standard_normal(s).astype(dtype) for s in shapes]
    got = numbax.jit(lambda *xs: np.einsum(subscripts, *xs, optimize=optimize))(*operands)
    _same(got, np.einsum(subscripts, *operands), 1e-5)
    got = numbax.jit(lambda *xs: xnp.einsum(subscripts, *xs, optimize=optimize))(*operands)
    _same(got, np.einsum(subscripts, *operands), 1e-5)


def test_einsum_operand_list_form_and_einsum_path(rng):
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((3, 4))
    _same(numbax.jit(lambda a, b: np.einsum(a, [0, 1], b, [1, 2], [0, 2]))(a, b), a @ b)
    _same(numbax.jit(lambda a, b: np.einsum(a, [0, 1], b, [1, 2]))(a, b), a @ b)
    x = rng.standard_normal((2, 3, 3))
    _same(numbax.jit(lambda x: np.einsum(x, [Ellipsis, 1, 1], [Ellipsis]))(x),
          np.einsum(x, [Ellipsis, 1, 1], [Ellipsis]))  # fmt: skip

    def with_path(a, b, c):
        path, _ = np.einsum_path("ij,jk,kl", a, b, c, optimize="greedy")
        return np.einsum("ij,jk,kl", a, b, c, optimize=path)

    c = rng.standard_normal((4, 2))
    _same(numbax.jit(with_path)(a, b, c), a @ b @ c)


def test_einsum_of_integers_bools_and_a_dtype():
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    _same(numbax.jit(lambda a: np.einsum("ij->", a))(a), np.einsum("ij->", a))
    m = np.array([[True, False], [False, False]])
    _same(numbax.jit(lambda m: np.einsum("ij,jk->ik", m, m))(m), np.einsum("ij,jk->ik", m, m))
    f = np.ones((2, 3), np.float32)
    _same(numbax.jit(lambda a, f: np.einsum("ij,ij", a, f, dtype=np.float64))(a, f),
          np.einsum("ij,ij", a, f, dtype=np.float64))  # fmt: skip
    with pytest.raises(TypeError, match="casting"):
        numbax.jit(lambda f: np.einsum("ij", f, dtype=np.int32))(f)


@pytest.mark.parametrize(
    ("subscripts", "shapes", "match"),
    [
        ("ii", [(2, 3)], "don't match"),
        ("i,i", [(3,), (4,)], "broadcast"),
        ("i->ii", [(3,)], "more than once"),
        ("ij", [(3,)], "names 2 axes"),
        ("...i->i", [(2, 3)], "ellipsis"),
        ("i,j", [(3,)], "operands"),
        ("i->j", [(3,)], "does not appear"),
    ],
)
def test_einsum_errors_name_the_problem(subscripts, shapes, match):
    operands = [np.ones(s) for s in shapes]
    with pytest.raises(ShapeError, match=match):
        numbax.jit(lambda *xs: np.einsum(subscripts, *xs))(*operands)


@pytest.mark.parametrize(
    ("subscripts", "shapes"),
    [("ii->i", [(3, 3)]), ("ii", [(3, 3)]), ("...ij,...jk->...ik", [(2, 3, 4), (1, 4, 2)]),
     ("bij,bjk,bkl->bil", [(2, 2, 3), (2, 3, 2), (2, 2, 2)]), ("iij,j->i", [(3, 3, 2), (2,)]),
     ("ij,ij->ij", [(3, 1), (3, 2)])],
)  # fmt: skip
def test_einsum_derivatives_match_finite_differences(subscripts, shapes, rng):
    operands = [rng.standard_normal(s) for s in shapes]
    check_derivatives(lambda *xs: np.einsum(subscripts, *xs, optimize=True), operands, rng)


def test_einsum_under_vmap(rng):
    a, b = rng.standard_normal((4, 3, 3)), rng.standard_normal((4, 3))
    got = numbax.vmap(lambda a, b: np.einsum("ii,i->i", a, b))(a, b)
    _same(got, np.einsum("bii,bi->bi", a, b))


# ------------------------------------------------------------------ ramps


def test_linspace_with_traced_endpoints_under_grad():
    def f(a, b):
        return (np.linspace(a, b, 7) ** 2).sum() + np.linspace(a, b, 3, endpoint=False)[1]

    rng = np.random.default_rng(2)
    check_derivatives(f, [np.float64(0.3), np.float64(1.7)], rng)
    check_derivatives(
        lambda a, b: np.sin(np.linspace(a, b, 4, axis=1)), [rng.standard_normal(2),
        rng.standard_normal((3, 2))], rng
    )  # fmt: skip
    g = numbax.grad(lambda a, b: np.linspace(a, b, 5).sum())
    assert g(1.0, 3.0) == pytest.approx(2.5)  # sum of (1 - k/4)


LINSPACE = [{}, {"num": 1}, {"num": 0}, {"endpoint": False}, {"retstep": True}, {"axis": -1},
            {"dtype": np.int64}, {"num": 2, "endpoint": False, "retstep": True}]  # fmt: skip


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_linspace_matches_numpy(dtype, rng):
    """Every keyword set of LINSPACE and numbax.numpy's linspace in one program."""
    a, b = rng.standard_normal(3).astype(dtype), rng.standard_normal((2, 1)).astype(dtype)
    every_kwargs = [{"num": 6, **kwargs} for kwargs in LINSPACE]

    def ramps(a, b):
        return [np.linspace(a, b, **kwargs) for kwargs in every_kwargs], xnp.linspace(0.0, a, 4)

    got, got_numbax_numpy = numbax.jit(ramps)(a, b)
    expected = [np.linspace(a, b, **kwargs) for kwargs in every_kwargs]
    for kwargs, g, want in zip(every_kwargs, got, expected, strict=True):
        if kwargs.get("retstep"):
            _same_each([(kwargs, "step")], [g[1]], [want[1]], 1e-6)
            g, want = g[0], want[0]
        _same_each([kwargs], [g], [want], 1e-6)
    _same(got_numbax_numpy, np.linspace(0.0, a, 4), 1e-6)


def test_logspace_and_geomspace_match_numpy_and_differentiate(rng):
    a, b = rng.uniform(0.1, 1.0, 3), rng.uniform(1.0, 2.0, 3)
    for fn in (
        lambda a, b: np.logspace(a, b, 5),
        lambda a, b: np.logspace(a, b, 4, base=np.array([2.0, 3.0, 4.0]), axis=1),
        lambda a, b: np.geomspace(a, b, 5),
        lambda a, b: np.geomspace(-a, -b, 4, endpoint=False, axis=-1),
    ):
        _same(numbax.jit(fn)(a, b), fn(a, b))
        check_derivatives(fn, [a, b], rng)


def test_arange_of_traced_bounds_is_refused_unless_known():
    with pytest.raises(ConcretizationError, match="linspace"):
        numbax.jit(lambda n: np.arange(n))(np.int64(4))
    with pytest.raises(ConcretizationError, match="static_argnums"):
        numbax.jit(lambda a: np.arange(a, 5.0, 0.5))(1.0)
    # In an eager transform the bounds are known: the ramp still depends on them.
    assert numbax.grad(lambda a: np.arange(a, 5.0).sum())(1.0) == pytest.approx(4.0)
    _same(numbax.jit(lambda n: np.arange(n), static_argnums=0)(4), np.arange(4))
