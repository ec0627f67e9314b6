"""NumPy 2's array-API spellings (``numpy_lib/numpy_array_api.py``) and ``numpy.linalg``'s
array-API variants, against NumPy: values, dtypes and shapes, views, derivatives against
finite differences, vmap, and every refusal at the user's line. The corpus
(``corpus_array_api.py``) runs them on every backend."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from tracer_util import assert_error, jit

import numbax
from numbax import numpy as xnp

sys.path.insert(0, str(Path(__file__).parent.parent / "transforms"))
from finite_differences import check_derivatives  # noqa: E402

INTEGERS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


def _assert_same(got, want):
    """Equal values (up to reassociation), and the same dtypes and shapes, leaf by leaf."""
    if isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _assert_same(g, w)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype.kind in "fc":
        np.testing.assert_allclose(got, want, rtol=1e-6 if want.dtype.itemsize <= 8 else 1e-12)
    else:
        np.testing.assert_array_equal(got, want)


def _matches_numpy(fn, *args):
    """``jit(fn)`` gives NumPy's answer (each on its own copy of arguments it may write)."""
    _assert_same(jit(fn)(*map(np.copy, args)), fn(*map(np.copy, args)))


@pytest.fixture
def x(rng):
    return rng.standard_normal((2, 3, 4))


# ------------------------------------------------------------------ astype, around


@pytest.mark.parametrize("dtype", [np.float32, "int16", bool, np.complex64, float])
def test_astype_converts_as_numpy(x, dtype):
    _matches_numpy(lambda a: np.astype(a * 3, dtype), x)
    _matches_numpy(lambda a: xnp.astype(a * 3, dtype, copy=False), x)


def test_astype_copies_unless_told_not_to(x):
    def program(a):
        copied, same = np.astype(a, a.dtype), np.astype(a, a.dtype, copy=False)
        converted = np.astype(a, np.float32, copy=False)  # another dtype: always a copy
        copied[0] = 1.0
        same[1] = 2.0
        converted[0, 0] = 9.0
        return a, copied, same

    _matches_numpy(program, x)


def test_astype_refusals_name_the_argument(x):
    assert_error(
        ValueError, jit(lambda a: np.astype(a, np.float32, device="gpu")), x, says=["device"]
    )
    assert_error(
        numbax.NumbaxTypeError, lambda: xnp.astype([1, 2], np.float32), says=["list", "astype"]
    )
    with pytest.raises(TypeError):
        np.astype([1, 2], np.float32)  # NumPy refuses a list too


@pytest.mark.parametrize("decimals", [0, 1, -1])
def test_around_is_round(x, decimals):
    _matches_numpy(lambda a: np.around(a * 50, decimals), x)
    _matches_numpy(lambda a: np.around(a, decimals), (x * 50).astype(np.int32))


# ------------------------------------------------------------- rollaxis, matrix_transpose, unstack


@pytest.mark.parametrize(("axis", "start"), [(2, 0), (0, 3), (1, 1), (-1, -2), (0, 2), (1, 3)])
def test_rollaxis_matches_numpy_and_is_a_view(x, axis, start):
    def program(a):
        rolled = np.rollaxis(a, axis, start)
        rolled[(0,) * rolled.ndim] = 7.0  # reaches a, as NumPy's view does
        return rolled + 0, a

    _matches_numpy(program, x)


def test_rollaxis_of_a_list_in_numbax_numpy():
    _assert_same(jit(lambda: xnp.rollaxis([[1, 2, 3]], 1))(), np.rollaxis(np.array([[1, 2, 3]]), 1))


def test_rollaxis_out_of_range_is_an_axis_error(x):
    assert_error(np.exceptions.AxisError, jit(lambda a: np.rollaxis(a, 0, 4)), x, says=["start"])
    assert_error(np.exceptions.AxisError, jit(lambda a: np.rollaxis(a, 3)), x, says=["rollaxis"])
    with pytest.raises(np.exceptions.AxisError):
        np.rollaxis(x, 0, 4)


@pytest.mark.parametrize("spelling", [np.matrix_transpose, np.linalg.matrix_transpose])
def test_matrix_transpose_swaps_the_last_two_axes_as_a_view(x, spelling):
    def program(a):
        t = spelling(a)
        t[..., 0, 1] = 5.0
        return t + 0, a

    _matches_numpy(program, x)
    _matches_numpy(spelling, x[0].astype(np.int32))
    assert_error(
        numbax.ShapeError, jit(lambda a: spelling(a)), x[0, 0], says=["matrix_transpose", "2-dim"]
    )


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_unstack_gives_views_along_the_axis(x, axis):
    def program(a):
        pieces = np.unstack(a, axis=axis)
        pieces[1][...] = -1.0
        return pieces, a

    _matches_numpy(program, x)


def test_unstack_refusals(x):
    assert_error(numbax.ShapeError, jit(lambda a: np.unstack(a[0, 0, 0])), x, says=["unstack"])
    assert_error(np.exceptions.AxisError, jit(lambda a: np.unstack(a, axis=3)), x)


# ------------------------------------------------------------- cumulative_sum, cumulative_prod


@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "int32", "uint8", "bool"])
def test_cumulative_dtypes_and_initial(rng, name, dtype):
    fn = getattr(np, name)
    a = (rng.standard_normal((3, 4)) * 2).astype(dtype)
    _matches_numpy(
        lambda a: (
            fn(a, axis=1),
            fn(a, axis=0, include_initial=True),
            fn(a[0], include_initial=True),
            fn(a, axis=-1, dtype=np.int16),
            fn(a[:, :0], axis=1, include_initial=True),
            fn(a[0, 0]),
        ),
        a,
    )


@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
def test_cumulative_refusals(x, name):
    fn = getattr(np, name)
    assert_error(numbax.ShapeError, jit(lambda a: fn(a)), x, says=[name, "axis="])
    with pytest.raises(ValueError, match="axis"):
        fn(x)
    assert_error(
        numbax.UnsupportedFunctionError,
        jit(lambda a: getattr(xnp, name)(a, axis=0, out=a)),
        x,
        says=[name, "out="],
    )


def test_cumulative_sum_writes_numpys_out(x):
    def program(a):
        out = np.zeros((2, 4, 4))
        np.cumulative_sum(a, axis=1, out=out[:, 1:])
        return out

    _matches_numpy(program, x)


@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
def test_cumulative_derivatives_match_finite_differences(rng, name):
    fn = getattr(np, name)
    a = rng.standard_normal((3, 4))
    a[1, 2] = 0.0  # the product's derivative at a zero
    check_derivatives(lambda a: fn(a, axis=1, include_initial=True), [a], rng)


# ------------------------------------------------------------------ matvec, vecmat, vecdot


GUFUNC_SHAPES = [
    ("matvec", (2, 3, 4), (4,)),
    ("matvec", (3, 4), (5, 1, 4)),
    ("vecmat", (3,), (2, 3, 4)),
    ("vecmat", (5, 1, 3), (2, 3, 4)),
    ("vecdot", (2, 3, 4), (4,)),
    ("vecdot", (3, 1, 4), (1, 2, 4)),
    ("vecdot", (0, 4), (4,)),
]


@pytest.mark.parametrize(("name", "first", "second"), GUFUNC_SHAPES)
@pytest.mark.parametrize("dtype", ["float64", "float32", "int8", "int64", "bool", "complex128"])
def test_gufuncs_match_numpy(rng, name, first, second, dtype):
    fn = getattr(np, name)

    def draw(shape):
        values = rng.standard_normal(shape) * 3
        if dtype == "complex128":
            values = values + 1j * rng.standard_normal(shape)  # vecdot and vecmat conjugate
        return values.astype(dtype)

    _matches_numpy(fn, draw(first), draw(second))


def test_nans_and_infinities_propagate_as_in_numpy():
    a = np.array([[np.inf, 1.0, 0.0], [np.nan, -np.inf, 2.0]])
    v = np.array([0.0, 1.0, np.inf])
    with np.errstate(invalid="ignore"):  # inf * 0, as NumPy warns
        _matches_numpy(
            lambda a, v: (
                np.matvec(a, v),
                np.vecdot(a, v),
                np.vecmat(v[:2], a),
                np.cumulative_sum(a, axis=1, include_initial=True),
                np.cumulative_prod(a, axis=0),
            ),
            a,
            v,
        )


def test_gufuncs_mix_dtypes_as_matmul(rng):
    a, v = rng.standard_normal((3, 4)).astype(np.float32), np.arange(4, dtype=np.int64)
    _matches_numpy(lambda a, v: (np.matvec(a, v), np.vecdot(v, a), np.vecmat(v, a.T)), a, v)


def test_gufunc_axes_and_axis_in_numbax_numpy(rng):
    a, b = rng.standard_normal((4, 3, 5)), rng.standard_normal((5, 4))
    numbax_spelling = jit(
        lambda a, b: (
            xnp.vecdot(a, a, axis=0),
            xnp.vecdot(a, a[0][None], axes=[1, 1]),
            xnp.matvec(a, b[0], axes=[(2, 0), 0, 0]),
            xnp.vecmat(b[:, 1], a, axes=[0, (2, 1), 0]),
            xnp.linalg.vecdot(a, a[:, :, :1], axis=1),
        )
    )(a, b)
    want = (
        np.vecdot(a, a, axis=0),
        np.vecdot(a, a[0][None], axes=[1, 1]),
        np.matvec(a, b[0], axes=[(2, 0), 0, 0]),
        np.vecmat(b[:, 1], a, axes=[0, (2, 1), 0]),
        np.linalg.vecdot(a, a[:, :, :1], axis=1),
    )
    _assert_same(numbax_spelling, want)
    numpy_spelling = jit(
        lambda a, b: (
            np.vecdot(a, a, axis=0),
            np.vecdot(a, a[0][None], axes=[1, 1]),
            np.matvec(a, b[0], axes=[(2, 0), 0, 0]),
            np.vecmat(b[:, 1], a, axes=[0, (2, 1), 0]),
            np.linalg.vecdot(a, a[:, :, :1], axis=1),
        )
    )(a, b)
    _assert_same(numpy_spelling, want)


@pytest.mark.parametrize(
    ("call", "error", "says"),
    [
        (lambda a, v: np.matvec(a, v[:3]), numbax.ShapeError, ["matvec", "(m,n),(n)->(m)"]),
        (lambda a, v: np.vecdot(a, v[0]), numbax.ShapeError, ["vecdot", "operand 1"]),
        (lambda a, v: np.vecmat(v[:2], a), numbax.ShapeError, ["vecmat", "core dimension"]),
        (lambda a, v: xnp.matvec(a, v, axis=0), numbax.NumbaxTypeError, ["matvec", "axis="]),
        (lambda a, v: xnp.vecdot(a, v, axis=0, axes=[0, 0]), numbax.NumbaxTypeError, ["both"]),
        (lambda a, v: xnp.matvec(a, v, axes=[(0, 1), 0]), numbax.ShapeError, ["axes=", "output"]),
        (lambda a, v: xnp.matvec(a, v, axes=[0, 0, 0]), numbax.ShapeError, ["axes=", "2 core"]),
        (lambda a, v: xnp.vecdot(a, v, axes=[5, 0]), np.exceptions.AxisError, ["vecdot"]),
        (lambda a, v: xnp.vecdot(a, v, keepdims=True), numbax.UnsupportedFunctionError, ["keep"]),
        (lambda a, v: np.vecdot(a, v, keepdims=True), numbax.UnsupportedFunctionError, ["vecdot"]),
    ],
)
def test_gufunc_refusals(rng, call, error, says):
    a, v = rng.standard_normal((3, 4)), rng.standard_normal(4)
    assert_error(error, jit(call), a, v, says=says)


def test_gufunc_methods_are_refused_by_numpy_itself(rng):
    v = rng.standard_normal(4)
    for call, error in [
        (lambda v: np.vecdot.outer(v, v), TypeError),
        (np.matvec.reduce, RuntimeError),
    ]:
        with pytest.raises(error):
            jit(call)(v)
        with pytest.raises(error):
            call(v)  # before any dispatch: NumPy has no such methods for gufuncs
    assert not hasattr(xnp.vecdot, "outer")


@pytest.mark.parametrize(
    "fn",
    [
        lambda a, v: np.matvec(a, v),
        lambda a, v: np.vecmat(v[:3], a),
        lambda a, v: np.vecdot(a, v),
        lambda a, v: np.linalg.vecdot(a, a, axis=0),
    ],
    ids=["matvec", "vecmat", "vecdot", "linalg.vecdot"],
)
def test_gufunc_derivatives_match_finite_differences(rng, fn):
    check_derivatives(fn, [rng.standard_normal((2, 3, 4)), rng.standard_normal(4)], rng)


def test_grad_of_vecdot_is_the_other_vector(rng):
    u, v = rng.standard_normal(5), rng.standard_normal(5)
    du, dv = numbax.grad(lambda u, v: np.vecdot(u, v), argnums=(0, 1))(u, v)
    np.testing.assert_allclose(du, v)
    np.testing.assert_allclose(dv, u)


def test_vmap_of_matvec_and_cumulative_sum(rng):
    a, v = rng.standard_normal((6, 3, 4)), rng.standard_normal((6, 4))
    batched = numbax.vmap(lambda a, v: np.cumulative_sum(np.matvec(a, v), include_initial=True))
    want = np.stack([np.cumulative_sum(a[i] @ v[i], include_initial=True) for i in range(6)])
    _assert_same(batched(a, v), want)
    _assert_same(jit(numbax.vmap(lambda u: np.vecdot(u, u)))(v), np.vecdot(v, v))


# ------------------------------------------------------------------ bitwise_count


@pytest.mark.parametrize("dtype", INTEGERS)
def test_bitwise_count_of_every_integer_dtype(dtype):
    info = np.iinfo(dtype)
    values = np.array([0, 1, 2, 3, 7, 8, 100, info.max, info.min, info.max - 1], dtype)
    if info.min < 0:
        values = np.concatenate([values, np.array([-1, -2, -100, info.min + 1], dtype)])
    _matches_numpy(np.bitwise_count, values)
    _matches_numpy(lambda v: np.bitwise_count(v[3]), values)  # 0-d


def test_bitwise_count_of_bools_and_python_ints():
    _matches_numpy(np.bitwise_count, np.array([True, False, True]))
    got = jit(lambda v: v + xnp.bitwise_count(-7))(np.uint8(1))
    _assert_same(got, np.uint8(1) + np.bitwise_count(-7))


def test_bitwise_count_refuses_floats_as_numpy():
    assert_error(
        numbax.NumbaxTypeError,
        jit(lambda v: np.bitwise_count(v)),
        np.ones(3),
        says=["bitwise_count", "float"],
    )
    with pytest.raises(TypeError):
        np.bitwise_count(np.ones(3))
    for call in (jit(np.bitwise_count.reduce), np.bitwise_count.reduce):
        with pytest.raises(ValueError, match="binary"):
            call(np.arange(3))  # NumPy refuses before any dispatch


# ------------------------------------------------------------------ numpy.linalg's variants


def test_linalg_variants_match_numpy(rng):
    a, b = rng.standard_normal((2, 4, 3)), rng.standard_normal((4, 3))
    _matches_numpy(
        lambda a, b: (
            np.linalg.cross(a, b),
            np.linalg.cross(a[:, :3], b[:3], axis=1),
            np.linalg.diagonal(a),
            np.linalg.diagonal(a, offset=-1),
            np.linalg.trace(a, offset=1),
            np.linalg.trace(a.astype(np.int32), dtype=np.float32),
            np.linalg.matmul(a, b.T),
            np.linalg.outer(a[0, 0], b[1]),
            np.linalg.tensordot(a, b, axes=2),
            np.linalg.tensordot(a, b, axes=([1], [0])),
            np.linalg.vecdot(a, b),
        ),
        a,
        b,
    )


def test_linalg_diagonal_is_a_read_only_view(rng):
    def program(a):
        np.linalg.diagonal(a)[0] = 1.0

    assert_error(numbax.InPlaceUpdateError, jit(program), rng.standard_normal((3, 3)))
    with pytest.raises(ValueError, match="read-only"):
        program(rng.standard_normal((3, 3)))

    def through_base(a):
        d = np.linalg.diagonal(a)
        a[1, 1] = 5.0
        return d + 0

    _matches_numpy(through_base, rng.standard_normal((3, 3)))


def test_linalg_variants_refuse_what_numpy_refuses(rng):
    a = rng.standard_normal((2, 3))
    assert_error(
        numbax.ShapeError, jit(lambda a: np.linalg.cross(a[:, :2], a[:, 1:])), a, says=["3-dim"]
    )
    with pytest.raises(ValueError):
        np.linalg.cross(a[:, :2], a[:, 1:])
    assert_error(numbax.ShapeError, jit(lambda a: np.linalg.outer(a, a[0])), a, says=["1-d"])
    with pytest.raises(ValueError):
        np.linalg.outer(a, a[0])


# ------------------------------------------------------------------ tensorinv, tensorsolve


@pytest.mark.parametrize(("shape", "ind"), [((4, 6, 8, 3), 2), ((24, 2, 3, 4), 1), ((3, 3), 1)])
def test_tensorinv_matches_numpy(rng, shape, ind):
    _matches_numpy(lambda a: np.linalg.tensorinv(a, ind=ind), rng.standard_normal(shape))


def test_tensorinv_of_integers_is_float64():
    _matches_numpy(np.linalg.tensorinv, np.array([[2, 1], [1, 3]]).reshape(2, 1, 2))


@pytest.mark.parametrize(
    ("a_shape", "b_shape", "axes"),
    [
        ((2, 3, 6), (2, 3), None),
        ((6, 2, 3), (2, 3), (0,)),
        ((3, 4, 2, 6), (3, 4), (3, 2)),
        ((4, 4), (4,), None),
    ],
)
def test_tensorsolve_matches_numpy(rng, a_shape, b_shape, axes):
    a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
    _matches_numpy(lambda a, b: np.linalg.tensorsolve(a, b, axes), a, b)


def test_tensor_derivatives_match_finite_differences(rng):
    a, b = (
        rng.standard_normal((2, 3, 6)) + np.eye(6).reshape(2, 3, 6) * 3,
        rng.standard_normal((2, 3)),
    )
    check_derivatives(np.linalg.tensorsolve, [a, b], rng)
    check_derivatives(lambda a: np.linalg.tensorinv(a, ind=1), [a.reshape(6, 2, 3)], rng)


def test_tensor_refusals(rng):
    a = rng.standard_normal((2, 3, 4))
    assert_error(ValueError, jit(lambda a: np.linalg.tensorinv(a, ind=0)), a, says=["ind"])
    assert_error(
        numbax.ShapeError, jit(lambda a: np.linalg.tensorsolve(a, a[:, 0, 0])), a, says=["prod"]
    )
    assert_error(
        ValueError, jit(lambda a: np.linalg.tensorsolve(a, a[0], axes=(-1,))), a, says=["axes"]
    )
    with pytest.raises(ValueError):
        np.linalg.tensorsolve(a, a[0], axes=(-1,))


# ------------------------------------------------------------------ dtype queries


def _queries(a, i, s):
    """Dtype queries of arrays and a Python float ``s``: their answers, as strings and bools."""
    answers = [
        np.result_type(a, i),
        np.result_type(i, s),
        np.result_type(a, 1j),
        np.result_type(i, np.float32, "i8"),
        np.common_type(a, i),
        np.common_type(i),
        np.min_scalar_type(a),
    ]
    casts = [np.can_cast(a, np.float16), np.can_cast(i, a.dtype), np.can_cast(i, "i1", "same_kind")]
    return tuple(np.dtype(t).str for t in answers), tuple(casts)


def test_dtype_queries_answer_as_numpy(rng):
    a = rng.standard_normal(3).astype(np.float32)
    i = np.arange(3, dtype=np.int16)
    got = []
    jit(lambda a, i, s: got.append(_queries(a, i, s)) or a)(a, i, 2.5)
    _assert_same(got[0], _queries(a, i, 2.5))


def test_dtype_queries_refuse_what_numpy_refuses():
    assert_error(
        TypeError,  # NumPy's own refusal, at the user's line
        jit(lambda a: np.common_type(a)),
        np.array([True]),
        says=["common_type"],
    )
    assert_error(TypeError, jit(lambda s: np.can_cast(s, np.float32) or s), 2.0, says=["can_cast"])
    with pytest.raises(TypeError):
        np.can_cast(2.0, np.float32)


def test_min_scalar_type_of_a_0d_array_needs_its_value():
    assert_error(
        numbax.ConcretizationError,
        jit(lambda a: np.min_scalar_type(a[0]) and a),
        np.arange(3),
        says=["min_scalar_type", "static_argnums"],
    )
    # Known while tracing (an eager transform), it is NumPy's answer.
    seen = []
    numbax.grad(lambda a: seen.append(np.min_scalar_type(np.sum(a) * 1000)) or np.sum(a))(
        np.ones(3)
    )
    assert seen == [np.min_scalar_type(3000.0)] == [np.float16]


# ------------------------------------------------------------------ memory queries


def _memory(a, b):
    """Memory queries over views of one array, and of a second one: their answers."""
    view, row, column, other = a[1:], a[0], a[:, 0], a.T
    fresh = a + 1
    pairs = [
        (a, a), (a, view), (view, row), (row, column), (a[0, :1], a[1, 1:]), (a[::2], a[1::2]),
        (other, row), (np.rollaxis(a, 1), a[2]), (a, fresh), (fresh, fresh), (a, b), (a[:0], a),
        (np.unstack(a)[1], a[1, 2]), (np.reshape(a, -1), a[2]), (np.astype(a, a.dtype), a),
    ]  # fmt: skip
    may = [np.may_share_memory(p, q) for p, q in pairs]
    exact = [np.shares_memory(p, q) for p, q in pairs]
    return tuple(may), tuple(exact)


def test_memory_queries_decide_as_numpy_on_views(rng):
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    got = []
    jit(lambda a, b: got.append(_memory(a, b)) or a)(a, b)
    _assert_same(got[0], _memory(a, b))


def test_a_traced_array_shares_no_memory_with_a_constant(rng):
    constant = rng.standard_normal(3)
    got = []
    jit(
        lambda a: got.append((np.shares_memory(a, constant), np.may_share_memory(constant, a))) or a
    )(constant)
    assert got == [(False, False)]
