"""Results whose size depends on the data (nonzero, argwhere, flatnonzero, compress, extract,
trim_zeros) and the set operations (isin, intersect1d, union1d, setdiff1d, setxor1d,
unique_*): NumPy's values, dtypes and shapes at the edges, ``size=``/``fill_value=``, the
count taken from a value known while tracing, derivatives, vmap, and every refusal. The
corpus (``corpus_selection.py``) runs them on every backend."""

from __future__ import annotations

import numpy as np
import pytest
from tracer_util import assert_error, central_differences, jit

import numbax
from numbax import numpy as xnp

NAN = np.nan


def _assert_same(got, want):
    """Same values (NaNs match), dtype and shape; tuples leaf by leaf, named ones by type."""
    if isinstance(want, tuple):
        assert type(got) is type(want), (type(got), type(want))
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _assert_same(g, w)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(got, want)


ARRAYS = {
    "floats": np.array([[0.0, 1.5, -0.0], [NAN, 0.0, -2.0]]),
    "ints": np.array([3, 0, 0, -1, 7, 0], dtype=np.int32),
    "bools": np.array([[True, False], [False, True], [True, True]]),
    "empty": np.zeros((2, 0)),
    "size_one": np.array([[[5.0]]]),
    "all_zero": np.zeros(4, np.int64),
    "three_d": np.arange(24).reshape(2, 3, 4) % 5 == 0,
}


# --------------------------------------------------------------- nonzero and friends


@pytest.mark.parametrize("x", ARRAYS.values(), ids=ARRAYS.keys())
@pytest.mark.parametrize("name", ["nonzero", "argwhere", "flatnonzero"])
def test_nonzero_family_with_the_exact_size_is_numpy(name, x):
    want, size = getattr(np, name)(x), np.count_nonzero(x)
    got = jit(lambda x: getattr(xnp, name)(x, size=size))(x)
    _assert_same(got, want)


@pytest.mark.parametrize("x", ARRAYS.values(), ids=ARRAYS.keys())
def test_numpy_spelling_counts_a_value_known_while_tracing(x):
    # Built from a closure constant, the value is known: the count is its count.
    got = jit(lambda: (np.nonzero(x + 0), np.argwhere(x + 0), np.flatnonzero(x + 0)))()
    _assert_same(got, (np.nonzero(x), np.argwhere(x), np.flatnonzero(x)))


@pytest.mark.parametrize("x", [np.array(3.0), np.array(0, np.int32), np.array(True)])
def test_a_scalar_has_rows_of_no_columns_and_one_flat_index(x):
    size = int(x != 0)
    _assert_same(jit(lambda x: xnp.argwhere(x, size=size))(x), np.argwhere(x))
    _assert_same(jit(lambda x: xnp.flatnonzero(x, size=size))(x), np.flatnonzero(x))


def test_nonzero_pads_and_truncates():
    x = np.array([[0, 4, 0], [5, 6, 0]])
    rows, columns = jit(lambda x: xnp.nonzero(x, size=5))(x)
    _assert_same(rows, np.array([0, 1, 1, 0, 0]))
    _assert_same(columns, np.array([1, 0, 1, 0, 0]))
    rows, columns = jit(lambda x: xnp.nonzero(x, size=5, fill_value=(-1, -2)))(x)
    _assert_same((rows, columns), (np.array([0, 1, 1, -1, -1]), np.array([1, 0, 1, -2, -2])))
    first_two = jit(lambda x: xnp.argwhere(x, size=2, fill_value=9))(x)
    _assert_same(first_two, np.argwhere(x)[:2])
    _assert_same(jit(lambda x: xnp.flatnonzero(x, size=4, fill_value=-1))(x), [1, 3, 4, -1])
    _assert_same(jit(lambda x: xnp.argwhere(x, size=4, fill_value=-1))(x)[3], [-1, -1])


def test_nonzero_under_vmap_with_size():
    xs = np.array([[0.0, 2.0, 0.0, 1.0], [3.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    got = numbax.vmap(lambda x: xnp.nonzero(x, size=2, fill_value=-1)[0])(xs)
    _assert_same(got, np.array([[1, 3], [0, -1], [-1, -1]]))
    got = jit(numbax.vmap(lambda x: xnp.flatnonzero(x > 0.5, size=3)))(xs)
    _assert_same(got, np.array([[1, 3, 0], [0, 0, 0], [0, 0, 0]]))


def test_nonzero_refusals():
    traced = jit(lambda x: np.nonzero(x))
    assert_error(
        numbax.ConcretizationError,
        traced,
        np.ones(3),
        says=["numpy.nonzero", "numbax.numpy.nonzero(", "size="],
    )
    for name in ("argwhere", "flatnonzero"):
        call = jit(lambda x, name=name: getattr(np, name)(x))
        assert_error(numbax.ConcretizationError, call, np.ones(3), says=[f"numbax.numpy.{name}("])
    assert_error(ValueError, jit(lambda x: np.nonzero(x)), np.array(1.0), says=["0d"])
    with pytest.raises(ValueError, match="0d"):
        np.nonzero(np.array(1.0))  # NumPy refuses too
    wrong_fills = jit(lambda x: xnp.nonzero(x, size=2, fill_value=(0, 0, 0)))
    assert_error(numbax.ShapeError, wrong_fills, np.ones((2, 2)), says=["fill_value=", "3"])
    negative = jit(lambda x: xnp.nonzero(x, size=-1))
    assert_error(numbax.ShapeError, negative, np.ones(3), says=["numpy.nonzero", "size=-1"])
    traced_size = jit(lambda x, n: xnp.extract(x > 0, x, size=n))
    assert_error(numbax.ConcretizationError, traced_size, np.ones(3), 2, says=["static_argnums"])
    static = jit(lambda x, n: xnp.extract(x > 0, x, size=n), static_argnums=1)
    _assert_same(static(np.ones(3), 2), np.ones(2))
    too_wide = jit(lambda x: xnp.flatnonzero(x, size=2, fill_value=2**70))
    assert_error(OverflowError, too_wide, np.ones(3), says=["flatnonzero", "int64"])


def test_a_traced_boolean_mask_index_stays_refused_and_extract_is_the_fix():
    x = np.array([1.0, -2.0, 3.0])
    assert_error(
        numbax.UnsupportedFunctionError,
        jit(lambda x: x[x > 0]),
        x,
        says=["mask", "numbax.numpy.extract(mask, x, size=n)"],
    )
    got = jit(lambda x: xnp.extract(x > 0, x, size=2))(x)
    _assert_same(got, x[x > 0])
    # A mask known while tracing indexes as NumPy does, like the functions here.
    _assert_same(jit(lambda x: x[np.arange(3) > 0])(x), x[1:])


# --------------------------------------------------------------- compress and extract

MATRIX = np.arange(12.0).reshape(3, 4) - 5


@pytest.mark.parametrize(
    ("condition", "axis"),
    [
        ([True, False, True], 0),
        ([0.0, 2.5, 0.0, -1.0], 1),
        ([False, True], -1),  # shorter than the axis: the rest is not selected
        ([1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 1], None),
        ([True, False, True, False, False, False], 0),  # longer, the extra entries false
        ([False, False, False], 0),
    ],
)
def test_compress_is_numpy(condition, axis):
    condition = np.asarray(condition)
    size, want = int(np.count_nonzero(condition)), np.compress(condition, MATRIX, axis=axis)
    if condition.size <= (MATRIX.size if axis is None else MATRIX.shape[axis]):
        got = jit(lambda x, c: xnp.compress(c, x, axis=axis, size=size))(MATRIX, condition)
        _assert_same(got, want)
    known = jit(lambda x: np.compress(condition, x, axis))(MATRIX)
    _assert_same(known, want)


def test_compress_pads_along_the_axis_and_writes_out():
    condition = np.array([True, False, False, True])
    got = jit(lambda x: xnp.compress(condition, x, 1, size=3, fill_value=-1.0))(MATRIX)
    _assert_same(got, np.concatenate([MATRIX[:, [0, 3]], np.full((3, 1), -1.0)], axis=1))

    def into_out(x):
        out = np.zeros((3, 2), np.int32)
        np.compress(condition, x, axis=1, out=out)
        return out

    _assert_same(jit(into_out)(MATRIX), into_out(MATRIX))


@pytest.mark.parametrize(
    ("condition", "arr"),
    [
        (MATRIX > 0, MATRIX),
        (np.array([[1, 0], [0, 1]]), np.arange(5)),  # fewer conditions than entries
        (np.array(True), np.array(4.0)),
        (np.zeros((2, 0), bool), np.zeros((2, 0))),
        (np.array([True, False, True]), np.array([True, True, False], bool)),
    ],
)
def test_extract_is_numpy(condition, arr):
    size = int(np.count_nonzero(condition))
    got = jit(lambda c, a: xnp.extract(c, a, size=size))(condition, arr)
    _assert_same(got, np.extract(condition, arr))


def test_extract_pads_with_fill_value_and_truncates():
    x = np.array([5, -1, 7, -3, 2], np.int32)
    _assert_same(
        jit(lambda x: xnp.extract(x > 0, x, size=5, fill_value=-9))(x),
        np.array([5, 7, 2, -9, -9], np.int32),
    )
    _assert_same(jit(lambda x: xnp.extract(x > 0, x, size=2))(x), np.array([5, 7], np.int32))
    _assert_same(jit(lambda x: xnp.extract(x > 9, x, size=2))(x), np.array([0, 0], np.int32))


@pytest.mark.parametrize(
    "select",
    [
        lambda x: xnp.extract(x > 0, x, size=4, fill_value=0.5),
        lambda x: xnp.compress(x[:, 0] > -3, x, axis=0, size=3, fill_value=1.0),
        lambda x: xnp.compress(np.array([1, 0, 1, 1]), x, axis=1, size=2),
        lambda x: xnp.extract(x < 0, np.sin(x), size=9),  # padded past the selection
    ],
    ids=["extract", "compress_rows", "compress_truncated", "extract_padded"],
)
def test_gradients_of_selected_values_match_finite_differences(select):
    x = np.array([[0.3, -1.2, 2.0, 0.7], [-0.4, 1.1, -2.5, 0.9], [1.6, -0.8, 0.2, -1.9]])
    weights = np.linspace(0.5, 2.0, 12)

    def loss(x):
        picked = select(x)
        return np.sum(np.ravel(picked) ** 2 * weights[: picked.size])

    got = jit(numbax.grad(loss))(x)
    want = central_differences(lambda v: float(jit(loss)(v)), x)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
    assert got.dtype == np.float64 and got.shape == x.shape


def test_eager_grad_takes_the_count_from_the_values():
    x = np.array([1.0, -2.0, 3.0, -0.5])
    got = numbax.grad(lambda x: np.sum(np.extract(x > 0, x) ** 2))(x)
    _assert_same(got, np.array([2.0, 0.0, 6.0, 0.0]))
    rows = numbax.grad(lambda x: np.sum(np.compress(x > 0, x)))(x)
    _assert_same(rows, np.array([1.0, 0.0, 1.0, 0.0]))


def test_compress_and_extract_refusals():
    assert_error(
        numbax.ConcretizationError,
        jit(lambda x: np.extract(x > 0, x)),
        np.ones(3),
        says=["numpy.extract", "numbax.numpy.extract(", "size="],
    )
    assert_error(
        numbax.ConcretizationError,
        jit(lambda x: np.compress(x > 0, x)),
        np.ones(3),
        says=["numbax.numpy.compress("],
    )
    two_d = jit(lambda x: xnp.compress(x > 0, x, size=1))
    assert_error(ValueError, two_d, np.ones((2, 2)), says=["numpy.compress", "1-d"])
    longer = jit(lambda x, c: xnp.compress(c, x, size=1))
    assert_error(numbax.ShapeError, longer, np.ones(2), np.ones(3, bool), says=["condition[:2]"])
    true_beyond = jit(lambda x: np.compress([False, False, True], x))
    assert_error(IndexError, true_beyond, np.ones(2), says=["numpy.compress", "index 2"])
    with pytest.raises(IndexError):
        np.compress([False, False, True], np.ones(2))  # NumPy refuses too
    assert_error(
        OverflowError,
        jit(lambda x: xnp.extract(x > 0, x, size=2, fill_value=-1)),
        np.ones(2, np.uint8),
        says=["numpy.extract", "uint8"],
    )


# --------------------------------------------------------------- trim_zeros


@pytest.mark.parametrize(
    ("filt", "trim", "axis"),
    [
        (np.array([0, 0, 1, 2, 0, 3, 0]), "fb", None),
        (np.array([0.0, 0.0, 1.0, 0.0]), "f", None),
        (np.array([0, 4, 0], np.int32), "B", None),
        (np.zeros(3), "fb", None),
        (np.zeros(0), "fb", None),
        (np.array([[0, 0, 0], [0, 1, 0], [0, 0, 2]]), "fb", None),
        (np.array([[0, 0, 0], [0, 1, 0], [0, 0, 2]]), "fb", 1),
        (np.array([[0, 0], [0, 0]]), "b", 0),
        (np.array(0.0), "fb", None),
        (np.array([False, True, False]), "fb", None),
    ],
)
def test_trim_zeros_of_a_known_value_is_numpy(filt, trim, axis):
    got = jit(lambda: np.trim_zeros(filt + 0 if filt.dtype != bool else filt | False, trim, axis))()
    _assert_same(got, np.trim_zeros(filt, trim, axis))


def test_trim_zeros_has_a_gradient_eagerly_and_returns_a_view():
    x = np.array([0.0, 0.0, 1.5, -2.0, 0.0])
    got = numbax.grad(lambda x: np.sum(np.trim_zeros(x) ** 2))(x)
    _assert_same(got, np.array([0.0, 0.0, 3.0, -4.0, 0.0]))

    def write_through(x):
        y = x * 1
        np.trim_zeros(y)[0] = 7.0
        return y

    _assert_same(
        numbax.grad(lambda x: np.sum(write_through(x)))(x), np.array([1.0] * 2 + [0.0] + [1.0] * 2)
    )


def test_trim_zeros_refusals():
    assert_error(
        numbax.ConcretizationError,
        jit(lambda x: np.trim_zeros(x)),
        np.ones(3),
        says=["numpy.trim_zeros", "Trim before calling", "flatnonzero"],
    )
    assert_error(ValueError, jit(lambda x: np.trim_zeros(x, "x")), np.ones(3), says=["trim"])
    # No axis to trim: the array as it is, traced or not.
    _assert_same(jit(lambda x: np.trim_zeros(x, axis=()))(np.zeros(2)), np.zeros(2))


# --------------------------------------------------------------- isin

ELEMENTS = np.array([[1.0, NAN, 3.0], [-0.0, 2.5, 7.0]])


@pytest.mark.parametrize(
    ("element", "tests"),
    [
        (ELEMENTS, np.array([7.0, NAN, 0.0, 1.0])),
        (ELEMENTS, np.zeros(0)),
        (np.array([1, 2, 3, 300], np.int32), np.array([[2.0], [300.0]])),
        (np.array([True, False]), np.array([1, 5])),
        (np.array(3, np.int64), np.array([1, 3])),
        (np.zeros((0, 2), np.int32), np.array([1])),
        (np.array([2, 4, 4], np.uint8), np.array([4, 4, 9], np.int64)),
        # More than 16 test elements: searched for among them sorted.
        (ELEMENTS, np.concatenate([np.arange(20.0)[::-1], [NAN, -0.0, 7.0]])),
        (np.arange(-5, 40, dtype=np.int32).reshape(5, 9), np.arange(0, 60, 3, dtype=np.int64)),
        (np.array([1.5, 2.0, 300.0, NAN], np.float32), np.arange(300, dtype=np.int16)[::-1]),
    ],
)
@pytest.mark.parametrize("invert", [False, True])
def test_isin_is_numpy(element, tests, invert):
    got = jit(lambda e, t: np.isin(e, t, invert=invert))(element, tests)
    _assert_same(got, np.isin(element, tests, invert=invert))
    unique_kind = jit(lambda e, t: np.isin(e, t, True, invert, kind="sort"))(element, tests)
    _assert_same(unique_kind, np.isin(element, tests, invert=invert))


def test_set_operations_with_many_test_elements_are_numpy_s():
    a = np.array([5, 1, 9, 33, 2, 7, 7, 40, -3, 12, 18, 21, 0, 4, 30, 26, 11, 8])
    b = np.array([7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 99])
    for name in ("setdiff1d", "setxor1d", "intersect1d", "union1d"):
        want = getattr(np, name)(a, b)
        call = getattr(xnp, name)
        got = numbax.jit(lambda x, y, call=call, n=want.size: call(x, y, size=n))(a, b)
        _assert_same(got, want)


def test_isin_table_kind_on_integers():
    x, tests = np.array([3, -1, 8], np.int32), np.array([8, 3])
    _assert_same(jit(lambda x: np.isin(x, tests, kind="table"))(x), np.isin(x, tests, kind="table"))


def test_isin_refusals_are_numpy_s():
    x = np.ones(2)
    assert_error(ValueError, jit(lambda x: np.isin(x, x, kind="hash")), x, says=["'hash'"])
    assert_error(ValueError, jit(lambda x: np.isin(x, x, kind="table")), x, says=["'table'"])
    with pytest.raises(ValueError, match="table"):
        np.isin(x, x, kind="table")


# --------------------------------------------------------------- set operations

PAIRS = {
    "ints": (np.array([3, 1, 2, 3, 7, 1], np.int32), np.array([[1, 3], [5, 3]], np.int32)),
    "floats_nan": (np.array([NAN, 1.0, 2.0, NAN, -0.5]), np.array([NAN, 2.0, 4.0])),
    "mixed": (np.array([1, 2, 5], np.int32), np.array([2.0, 2.5, 5.0])),
    "one_empty": (np.zeros(0, np.int64), np.array([4, 1, 4])),
    "both_empty": (np.zeros(0), np.zeros((0, 3))),
    "bools": (np.array([True, True]), np.array([False, True, False])),
    "disjoint": (np.array([[9.0]]), np.array([1.0, 2.0])),
}
SET_OPERATIONS = ["intersect1d", "union1d", "setdiff1d", "setxor1d"]


@pytest.mark.parametrize(("a", "b"), PAIRS.values(), ids=PAIRS.keys())
@pytest.mark.parametrize("name", SET_OPERATIONS)
def test_set_operations_with_the_exact_size_are_numpy(name, a, b):
    want = getattr(np, name)(a, b)
    got = jit(lambda a, b: getattr(xnp, name)(a, b, size=want.size))(a, b)
    _assert_same(got, want)
    known = jit(
        lambda: getattr(np, name)(a + 0, b + 0) if a.dtype != bool else getattr(np, name)(a, b)
    )()
    _assert_same(known, want)


# assume_unique follows NumPy's algorithm, so arrays that are not unique after all give
# NumPy's answer too.
ASSUMED = {
    "unique": (np.array([4, 1, 9], np.int64), np.array([9, 2, 4], np.int64)),
    "not_unique": (np.array([1.0, 1.0, 2.0, 5.0]), np.array([2.0, 2.0, 3.0])),
    "nan": (np.array([NAN, 1.0]), np.array([NAN, 3.0])),
    "empty": (np.zeros(0, np.int32), np.array([2], np.int32)),
}


@pytest.mark.parametrize(("a", "b"), ASSUMED.values(), ids=ASSUMED.keys())
@pytest.mark.parametrize("name", ["intersect1d", "setdiff1d", "setxor1d"])
def test_assume_unique_is_numpy(name, a, b):
    want = getattr(np, name)(a, b, assume_unique=True)
    got = jit(lambda a, b: getattr(xnp, name)(a, b, True, size=want.size))(a, b)
    _assert_same(got, want)


@pytest.mark.parametrize(("a", "b"), [*PAIRS.values(), *ASSUMED.values()])
@pytest.mark.parametrize("assume_unique", [False, True])
def test_intersect1d_indices_are_numpy(a, b, assume_unique):
    want = np.intersect1d(a, b, assume_unique, return_indices=True)
    fn = jit(lambda a, b: xnp.intersect1d(a, b, assume_unique, True, size=want[0].size))
    _assert_same(fn(a, b), want)


def test_set_operations_pad_with_the_first_value_or_fill_value():
    a, b = np.array([5, 3, 3, 8], np.int32), np.array([3, 9, 5])
    values, first, second = jit(lambda a, b: xnp.intersect1d(a, b, return_indices=True, size=4))(
        a, b
    )
    _assert_same(
        (values, first, second),
        (np.array([3, 5, 3, 3]), np.array([1, 0, 1, 1]), np.array([0, 2, 0, 0])),
    )
    _assert_same(
        jit(lambda a, b: xnp.union1d(a, b, size=6, fill_value=-1))(a, b), [3, 5, 8, 9, -1, -1]
    )
    _assert_same(jit(lambda a, b: xnp.setdiff1d(a, b, size=3))(a, b), np.array([8, 8, 8], np.int32))
    _assert_same(jit(lambda a, b: xnp.setdiff1d(a, a, size=2))(a, b), np.array([0, 0], np.int32))
    _assert_same(jit(lambda a, b: xnp.setxor1d(a, b, size=1))(a, b), np.array([8]))
    _assert_same(jit(lambda a, b: xnp.setxor1d(a, b, size=4, fill_value=0))(a, b), [8, 9, 0, 0])


@pytest.mark.parametrize("name", SET_OPERATIONS)
def test_set_operation_refusals(name):
    a = np.array([1, 2])
    assert_error(
        numbax.ConcretizationError,
        jit(lambda a: getattr(np, name)(a, a)),
        a,
        says=[f"numpy.{name}", f"numbax.numpy.{name}(", "size="],
    )
    assert_error(
        OverflowError,
        jit(lambda a: getattr(xnp, name)(a, a, size=3, fill_value=-1)),
        a.astype(np.uint16),
        says=[f"numpy.{name}", "uint16"],
    )


# --------------------------------------------------------------- unique_*

UNIQUE_INPUTS = {
    "ints": np.array([[3, 1, 2], [3, 7, 1]], np.int32),
    "nans": np.array([3.0, NAN, 1.0, NAN, -0.0, 0.0]),
    "bools": np.array([True, False, True]),
    "scalar": np.array(2.5),
    "empty": np.zeros(0, np.int64),
}


@pytest.mark.parametrize("x", UNIQUE_INPUTS.values(), ids=UNIQUE_INPUTS.keys())
@pytest.mark.parametrize("name", ["unique_all", "unique_counts", "unique_inverse"])
def test_unique_tuples_are_numpy(name, x):
    want = getattr(np, name)(x)
    got = jit(lambda x: getattr(xnp, name)(x, size=want.values.size))(x)
    _assert_same(got, want)
    _assert_same(jit(lambda: getattr(np, name)(x + 0 if x.dtype != bool else x))(), want)


@pytest.mark.parametrize("x", UNIQUE_INPUTS.values(), ids=UNIQUE_INPUTS.keys())
def test_unique_values_are_sorted(x):
    # NumPy 2.4 returns integers in its hash table's order, which it does not promise.
    want = np.sort(np.unique_values(x))
    _assert_same(jit(lambda x: xnp.unique_values(x, size=want.size))(x), want)


def test_unique_counts_pads_with_zero_counts():
    x = np.array([2, 2, 5])
    values, counts = jit(lambda x: xnp.unique_counts(x, size=4, fill_value=-1))(x)
    _assert_same((values, counts), (np.array([2, 5, -1, -1]), np.array([2, 1, 0, 0])))


@pytest.mark.parametrize("name", ["unique_all", "unique_counts", "unique_inverse", "unique_values"])
def test_unique_tuple_refusals(name):
    assert_error(
        numbax.ConcretizationError,
        jit(lambda x: getattr(np, name)(x)),
        np.ones(3),
        says=[f"numpy.{name}", f"numbax.numpy.{name}(", "size="],
    )


def test_numbax_numpy_runs_eagerly_on_arrays_without_size():
    x = np.array([[0, 3], [4, 0]])
    _assert_same(xnp.nonzero(x), np.nonzero(x))
    _assert_same(xnp.compress([True, False], x, axis=1), np.compress([True, False], x, axis=1))
    _assert_same(xnp.intersect1d([1, 2, 3], [3, 2, 9]), np.intersect1d([1, 2, 3], [3, 2, 9]))
    _assert_same(xnp.unique_inverse(x), np.unique_inverse(x))
    _assert_same(xnp.trim_zeros(x[0]), np.trim_zeros(x[0]))
