"""Writes into arrays (copyto, put, putmask, place, put_along_axis, fill_diagonal) and
index construction (choose, block, resize, flat indices, bits, apply_along_axis): the
caller's arrays after a jitted write, views, casting, out-of-range indices, derivatives
against central differences, and every refusal. The corpus (``corpus_placement.py``)
covers the values on every backend, under grad and vmap."""

from __future__ import annotations

import numpy as np
import pytest
from tracer_util import assert_error, central_differences, jit

import numbax
from numbax import numpy as xnp

X = np.array([[1.0, -2.0, 3.0, 0.5], [4.0, 0.0, -1.0, 2.0], [-3.0, 5.0, 2.5, -0.5]])
MASK = np.array(
    [[True, False, True, False], [False, False, True, True], [True, True, False, False]]
)


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    np.testing.assert_array_equal(got, want)


# ----------------------------------------------------- the caller's array is written

WRITES = {
    "copyto": lambda a, b, m: np.copyto(a, b[0], where=m),
    "copyto_scalar": lambda a, b, m: np.copyto(a, True),
    "put": lambda a, b, m: np.put(a, [0, -1, 5], b[1, :2]),
    "put_wrap": lambda a, b, m: np.put(a, np.array([[13], [-2]]), b[2, 0], mode="wrap"),
    "put_clip": lambda a, b, m: np.put(a, [40, -40], b[0, :2], mode="clip"),
    "putmask": lambda a, b, m: np.putmask(a, m, b[0, :3]),
    "place": lambda a, b, m: np.place(a, m, b[2, ::-1]),
    "put_along_axis": lambda a, b, m: np.put_along_axis(a, np.array([[1], [3], [-1]]), b[:, :1], 1),
    "put_along_none": lambda a, b, m: np.put_along_axis(a, np.array([0, 11]), b[0, 0], None),
    "fill_diagonal": lambda a, b, m: np.fill_diagonal(a, b[1, :2]),
    "fill_wrap": lambda a, b, m: np.fill_diagonal(a.T, b[0]),
}


@pytest.mark.parametrize("name", list(WRITES))
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.bool_])
def test_a_jitted_write_changes_the_callers_array_as_numpy(name, dtype):
    write = WRITES[name]
    a, b = X.astype(dtype), (X * 3 + 1).astype(dtype)
    want = a.copy()
    assert write(want, b, MASK) is None
    got = a.copy()
    assert jit(write)(got, b, MASK) is None
    _same(got, want)


def test_traced_masks_and_indices():
    def fn(a, m, i, v):
        np.place(a, m, v)
        np.putmask(a, ~m, v * 10)
        np.put_along_axis(a, i, -v[0], axis=0)
        np.put(a, i[0], v[1:3] + 0.5)

    i = np.array([[2, 0, 1, 2]])
    v = np.array([1.0, 2.0, 3.0])
    want, got = X.copy(), X.copy()
    fn(want, MASK, i, v)
    jit(fn)(got, MASK, i, v)
    _same(got, want)


def test_writes_reach_views_and_the_function_can_read_them():
    def fn(a, v):
        row = a[1]
        np.copyto(a[0], v)
        np.put(row, [0, 2], v[:2])
        np.fill_diagonal(a[:, 1:], -1)
        return row.sum() + a[0, 0]

    want_a, got_a = X.copy(), X.copy()
    v = np.array([9.0, 8.0, 7.0, 6.0])
    want = fn(want_a, v)
    assert jit(fn)(got_a, v) == want
    _same(got_a, want_a)


def test_internal_arrays_can_be_written_and_returned():
    def fn(x):
        out = np.zeros_like(x)
        np.copyto(out, x, where=x > 0)
        np.place(out, out == 0, [-1, -2])
        return out

    _same(jit(fn)(X), fn(X))


def test_empty_arrays_and_empty_values_write_nothing():
    def fn(a, e):
        np.put(a, [], e)
        np.put(a, [1], e[:0])
        np.putmask(a, a > 0, e[:0])
        np.copyto(a[:0], a[:0] * 2)
        np.fill_diagonal(a, e[:0])
        np.place(a, np.zeros(a.shape, bool), e[:0])

    got = X.copy()
    jit(fn)(got, np.ones(3))
    _same(got, X)


# ---------------------------------------------------------------- casting


def test_copyto_casts_as_numpy_casts():
    ints = np.zeros(3, np.int32)
    for src, casting in [(np.arange(3), "same_kind"), (5, "no"), (2.5, "unsafe")]:
        want, got = ints.copy(), ints.copy()
        np.copyto(want, src, casting=casting)
        jit(lambda a, s=src, c=casting: np.copyto(a, s, casting=c))(got)
        _same(got, want)
    copy = jit(lambda a, s: np.copyto(a, s))
    assert_error(numbax.NumbaxTypeError, copy, ints, np.ones(3), says=["numpy.copyto", "same_kind"])
    assert_error(numbax.NumbaxTypeError, jit(lambda a: np.copyto(a, 1.5)), ints, says=["copyto"])
    assert_error(
        numbax.NumbaxTypeError,
        jit(lambda a, s: np.copyto(a, s, casting="safe")),
        ints,
        np.arange(3),
        says=["'safe'"],
    )
    assert_error(
        numbax.ScalarOverflowError, jit(lambda a: np.copyto(a, 300)), np.zeros(2, np.uint8)
    )
    assert_error(
        numbax.NumbaxTypeError, jit(lambda a: np.copyto(a, 1, where=1)), ints, says=["bool"]
    )
    for call in (lambda: np.copyto(ints, np.ones(3)), lambda: np.copyto(ints, 1.5)):
        with pytest.raises(TypeError):
            call()  # NumPy refuses too


def test_putmask_and_place_cast_arrays_safely_and_scalars_as_numpy():
    small = np.zeros(3, np.uint8)
    for name in ("putmask", "place"):
        function = getattr(np, name)
        assert_error(
            numbax.NumbaxTypeError,
            jit(lambda a, v, f=function: f(a, a == 0, v)),
            small,
            np.array([300, 1]),
            says=[f"numpy.{name}", "'safe'"],
        )
        with pytest.raises(TypeError):
            function(small.copy(), small == 0, np.array([300, 1]))
        want, got = small.copy(), small.copy()
        function(want, want == 0, [2.5, np.int64(-1)])
        jit(lambda a, f=function: f(a, a == 0, [2.5, np.int64(-1)]))(got)
        _same(got, want)
    assert_error(
        numbax.ScalarOverflowError, jit(lambda a: np.putmask(a, a == 0, -1)), small, says=["-1"]
    )


def test_put_casts_unsafely_as_numpy():
    want, got = np.zeros(3, np.uint8), np.zeros(3, np.uint8)
    values = np.array([300, 1.7, -1.0])
    np.put(want, [0, 1], values[:2].astype(np.int64))
    jit(lambda a, v: np.put(a, [0, 1], v[:2].astype(np.int64)))(got, values)
    _same(got, want)


# ------------------------------------------------------- out-of-range indices


def test_concrete_out_of_range_indices_raise_as_numpy():
    assert_error(IndexError, jit(lambda a: np.put(a, [12], 1.0)), X, says=["size 12"])
    assert_error(IndexError, jit(lambda a: np.put(a[:0], [0], 1.0)), X, says=["empty"])
    assert_error(
        IndexError, jit(lambda a: np.put_along_axis(a, np.array([[4]]), 1.0, 1)), X, says=["4"]
    )
    assert_error(ValueError, jit(lambda a: np.choose(np.ones(4, int), [a[0]])), X, says=["choice"])
    six = np.array([6])  # a concrete index: NumPy's spelling would not reach numbax
    assert_error(ValueError, jit(lambda x: xnp.unravel_index(six, (2, 3))), X, says=["size 6"])
    assert_error(
        ValueError,
        jit(lambda x: xnp.ravel_multi_index((six - 4, six - 6), (2, 3))),
        X,
        says=["coordinates"],
    )
    for call in (
        lambda: np.put(X.copy(), [12], 1.0),
        lambda: np.choose(np.ones(4, int), [X[0]]),
        lambda: np.unravel_index([6], (2, 3)),
    ):
        with pytest.raises((IndexError, ValueError)):
            call()


def test_traced_out_of_range_indices_drop_writes_and_clamp_reads():
    a = X.copy()
    jit(lambda a, i: np.put(a, i, 9.0))(a, np.array([1, 12, -13]))
    want = X.copy()
    want.flat[1] = 9.0
    _same(a, want)
    a = X.copy()
    jit(lambda a, i: np.put_along_axis(a, i, 9.0, 1))(a, np.array([[5], [-1], [4]]))
    want = X.copy()
    want[1, -1] = 9.0
    _same(a, want)
    chosen = jit(lambda i, x: np.choose(i, [x, -x]))(np.array([5, -3, 1, 0]), X[0])
    _same(chosen, np.choose([1, 0, 1, 0], [X[0], -X[0]]))
    rows = jit(lambda i: np.unravel_index(i, (2, 3)))(np.array([7, -1, 4]))
    _same(np.stack(rows), np.stack(np.unravel_index([5, 0, 4], (2, 3))))
    flat = jit(lambda i, j: np.ravel_multi_index((i, j), (2, 3)))(
        np.array([3, 1]), np.array([0, 9])
    )
    _same(flat, np.array([3, 5]))


# -------------------------------------------------------------- derivatives


def _write_loss(values):
    a = np.zeros_like(values) + 0.5 * values[::-1]
    np.copyto(a, values * values, where=MASK)
    np.putmask(a, ~MASK, np.sin(values[0]))
    np.place(a, MASK, values[2] * 3)
    np.put_along_axis(a, np.array([[1, 0, 2, 0]]), np.exp(values[:1]), axis=0)
    np.put(a, [0, 5], values[1, :2] ** 3)
    np.fill_diagonal(a, -values[0])
    return (a * np.cos(a)).sum()


def _index_loss(values):
    picks = np.array([[0, 1, 2, 1], [2, 2, 0, 1], [1, 0, 0, 2]])
    chosen = np.choose(picks, [values, values**2, np.tanh(values)])
    blocks = np.block([[values, values[:, :1] * 2], [values[:1] ** 2, values[:1, :1]]])
    resized = np.resize(values, (5, 3)) * np.resize(values[0], 15).reshape(5, 3)
    lines = np.apply_along_axis(lambda r: r * r.sum(), 1, values)
    return (chosen * chosen).sum() + np.sin(blocks).sum() + resized.sum() + lines.sum()


@pytest.mark.parametrize("loss", [_write_loss, _index_loss], ids=["writes", "indices"])
@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_derivatives_matchcentral_differences(loss, mode):
    fn = loss if mode == "eager" else jit(loss)
    got = numbax.grad(fn)(X)
    np.testing.assert_allclose(got, central_differences(loss, X), rtol=1e-6, atol=1e-8)


def test_grad_through_a_write_into_the_argument():
    def loss(a, v):
        np.copyto(a, v, where=MASK[0])
        return (a * a).sum()

    v = np.array([1.0, 2.0, 3.0, 4.0])
    a = X[0].copy()
    got = numbax.grad(loss, argnums=(0, 1))(a, v)[1]
    _same(got, np.where(MASK[0], 2 * v, 0.0))
    _same(a, np.where(MASK[0], v, X[0]))  # eager grad writes the argument back


# -------------------------------------------------- where the write cannot go


def test_a_numpy_array_cannot_hold_traced_values():
    outside = np.zeros(4)
    assert_error(
        numbax.InPlaceUpdateError,
        jit(lambda v: np.copyto(outside, v)),
        np.ones(4),
        says=["numpy.copyto", "NumPy array"],
    )
    assert_error(
        numbax.NumbaxTypeError, jit(lambda v: np.put([0, 0], [0], v)), np.ones(1), says=["list"]
    )


def test_a_write_into_a_captured_array_from_a_loop_body_is_refused():
    def fn(a):
        def body(k, carry):
            np.put(a, [0], carry)
            return carry + 1.0

        return numbax.fori_loop(0, 2, body, 1.0)

    assert_error(numbax.InPlaceUpdateError, jit(fn), X.copy(), says=["numpy.put", "nested"])


def test_a_read_only_view_is_refused():
    assert_error(
        numbax.InPlaceUpdateError,
        jit(lambda a: np.putmask(np.broadcast_to(a[0], (2, 4)), MASK[:2], 1.0)),
        X.copy(),
        says=["read-only"],
    )


def test_place_with_no_values_and_a_traced_mask_is_refused():
    place = jit(lambda a, m: np.place(a, m, []))
    assert_error(numbax.ConcretizationError, place, X.copy(), MASK, says=["numpy.place"])
    assert_error(ValueError, jit(lambda a: np.place(a, MASK, [])), X.copy(), says=["empty"])
    got = X.copy()
    jit(lambda a: np.place(a, np.zeros(a.shape, bool), []))(
        got
    )  # selects nothing: nothing to insert
    _same(got, X)


# ------------------------------------------------------- index construction


def test_values_match_numpy():
    def fn(x, i):
        return (
            np.choose(i % 3, [x, -x, 2.5], mode="clip"),
            np.choose(i, np.stack([x, x * 2, x * 3, x * 4]), mode="wrap"),
            np.diagflat(x[:2], 1),
            np.resize(x, (2, 7)),
            np.resize(x[:0], 3),
            np.resize(x, 0),
            np.block([[x[:2, :2], x[:2, 2:]], [x[2:]]]),
            np.block([1, x[0], True]),
            np.block(x),
            np.ravel_multi_index((i % 3, i % 4), (3, 4)),
            np.ravel_multi_index(np.stack([i, i]) % 3, (3, 3), order="F"),
            np.ravel_multi_index((i, i), (2, 3), mode=("wrap", "clip")),
            np.unravel_index(i, (3, 4, 5)),
            np.unravel_index(i[0, 0], (3, 4), order="F"),
            np.diag_indices_from(x[:, :3]),
            np.tril_indices_from(x, -1),
            np.triu_indices_from(x.T, 2),
            np.apply_along_axis(lambda r: np.outer(r, r), 0, x),
            np.apply_along_axis(lambda r: r.max(), 1, x),
            np.apply_along_axis(lambda r, s: (r > s).sum(), 0, x, 0.0),
            np.apply_over_axes(np.sum, x.reshape(3, 2, 2), [0, -1]),
            np.apply_over_axes(np.cumsum, x, 1),
        )

    i = np.array([[0, 3, 1, 2], [5, 4, 1, 0], [2, 2, 3, 1]])
    for got, want in zip(jit(fn)(X, i), fn(X, i), strict=True):
        if isinstance(want, tuple):
            assert len(got) == len(want)
            for g, w in zip(got, want, strict=True):
                _same(g, w)
        else:
            _same(got, want)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.int64, np.uint8])
def test_bits_match_numpy(dtype):
    bits = (np.arange(30).reshape(3, 10) % 3).astype(dtype)
    packed = np.packbits(bits != 0, axis=1)

    def fn(b, p):
        return (
            np.packbits(b),
            np.packbits(b, axis=0, bitorder="little"),
            np.packbits(b[:, :0], axis=1),
            np.packbits(b[0, 0]),
            np.unpackbits(p),
            np.unpackbits(p, axis=1, count=10),
            np.unpackbits(p, axis=0, count=-2, bitorder="little"),
            np.unpackbits(p, axis=1, count=20),
            np.unpackbits(p[:0]),
        )

    for got, want in zip(jit(fn)(bits, packed), fn(bits, packed), strict=True):
        _same(got, want)


def test_numbax_numpy_spellings():
    _same(xnp.resize(np.arange(3), (2, 2)), np.resize(np.arange(3), (2, 2)))
    _same(xnp.choose(np.array([1, 0]), [[1, 2], [3, 4]]), np.array([3, 2]))
    out = np.zeros(4, np.int32)
    _same(
        jit(lambda i, x: np.choose(i, [x, -x], out=np.zeros(4, np.int32)))(MASK[0], X[0]),
        np.choose(MASK[0], [X[0], -X[0]], out=out),
    )


# ----------------------------------------------------------------- refusals

REFUSALS = [
    ("block_tuple", numbax.NumbaxTypeError, lambda x: xnp.block((x, x)), ["tuple"]),
    ("block_depth", numbax.ShapeError, lambda x: np.block([[x], x]), ["depths"]),
    ("block_empty", numbax.ShapeError, lambda x: np.block([x, []]), ["empty"]),
    ("resize_negative", numbax.ShapeError, lambda x: np.resize(x, (2, -1)), ["non-negative"]),
    ("pack_float", numbax.NumbaxTypeError, lambda x: np.packbits(x), ["packbits", "float64"]),
    ("unpack_int", numbax.NumbaxTypeError, lambda x: np.unpackbits(x > 0), ["unsigned byte"]),
    (
        "unpack_count",
        numbax.ShapeError,
        lambda x: np.unpackbits((x > 0).astype(np.uint8), count=-99),
        ["count"],
    ),
    ("bitorder", ValueError, lambda x: np.packbits(x > 0, bitorder="middle"), ["'big'"]),
    (
        "ravel_float",
        numbax.NumbaxTypeError,
        lambda x: np.ravel_multi_index((x, x), (2, 2)),
        ["int"],
    ),
    (
        "ravel_length",
        numbax.ShapeError,
        lambda x: np.ravel_multi_index((x > 0,), (2, 2)),
        ["shape"],
    ),
    (
        "ravel_order",
        ValueError,
        lambda x: np.ravel_multi_index((x > 0, x > 0), (2, 2), order="K"),
        ["order"],
    ),
    ("choose_float", numbax.NumbaxTypeError, lambda x: np.choose(x, [x]), ["choose", "safe"]),
    ("choose_mode", ValueError, lambda x: np.choose(x > 0, [x, x], mode="nearest"), ["mode"]),
    ("choose_empty", numbax.ShapeError, lambda x: np.choose(x > 0, []), ["0-length"]),
    ("diag_from_1d", numbax.ShapeError, lambda x: np.diag_indices_from(x[0]), ["2-d"]),
    ("diag_from_rect", numbax.ShapeError, lambda x: np.diag_indices_from(x), ["equal length"]),
    ("tril_from_3d", numbax.ShapeError, lambda x: np.tril_indices_from(x[None]), ["2-d"]),
    ("fill_1d", numbax.ShapeError, lambda x: np.fill_diagonal(x[0].copy(), 1), ["2-d"]),
    ("fill_nd", numbax.ShapeError, lambda x: np.fill_diagonal(x[None].copy(), 1), ["equal length"]),
    ("putmask_size", numbax.ShapeError, lambda x: np.putmask(x.copy(), x[0] > 0, 1), ["same size"]),
    ("put_mode", ValueError, lambda x: np.put(x.copy(), [0], 1, mode="nearest"), ["mode"]),
    ("along_float", IndexError, lambda x: np.put_along_axis(x.copy(), x, 1.0, 1), ["integer"]),
    (
        "along_none",
        numbax.ShapeError,
        lambda x: np.put_along_axis(x.copy(), np.zeros((1, 1), int), 1.0, None),
        ["1-d"],
    ),
    (
        "along_values",
        numbax.ShapeError,
        lambda x: np.put_along_axis(x.copy(), np.zeros((3, 1), int), x, 1),
        ["(3, 4)"],
    ),
    ("copyto_shape", numbax.ShapeError, lambda x: np.copyto(x.copy(), x[:, :2]), ["(3, 2)"]),
    ("apply_empty", numbax.ShapeError, lambda x: np.apply_along_axis(np.sum, 0, x[:, :0]), ["0"]),
    ("apply_axis", numbax.AxisError, lambda x: np.apply_along_axis(np.sum, 2, x), ["axis"]),
    (
        "over_axes",
        numbax.ShapeError,
        lambda x: np.apply_over_axes(lambda a, k: a.sum(), x, [0]),
        ["shape"],
    ),
]


@pytest.mark.parametrize(
    ("error", "call", "says"), [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS]
)
def test_refusals_name_the_function_and_the_line(error, call, says):
    assert_error(error, jit(call), X, says=says)
    with pytest.raises((ValueError, TypeError, IndexError)):
        call(X)  # NumPy refuses too


def test_shape_arguments_are_static():
    for call, name in [
        (lambda x, n: np.resize(x, n), "resize"),
        (lambda x, n: np.unravel_index(n, (n, 2)), "unravel_index"),
        (lambda x, n: np.unpackbits((x > 0).astype(np.uint8), count=n), "unpackbits"),
        (lambda x, n: np.tril_indices_from(x, n), "tril_indices_from"),
    ]:
        assert_error(numbax.ConcretizationError, jit(call), X, 2, says=[name, "static_argnums"])
    _same(jit(lambda x, n: np.resize(x, n), static_argnums=1)(X, 5), np.resize(X, 5))


def test_ix_is_numpys_open_mesh():
    rows, columns = np.array([2, 0]), np.array([True, False, True, True])

    def fn(x, rows):
        mesh = np.ix_(rows, columns, [])
        return mesh + (x[np.ix_(rows, columns)], np.ix_(rows.astype(np.float32))[0])

    got, want = jit(fn)(X, rows), fn(X, rows)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        _same(g, w)
    assert_error(numbax.ShapeError, jit(lambda x: np.ix_(x)), X, says=["ix_", "1 dimensional"])
    assert_error(
        numbax.ConcretizationError, jit(lambda x: np.ix_(x[0] > 0)), X, says=["ix_", "nonzero"]
    )
