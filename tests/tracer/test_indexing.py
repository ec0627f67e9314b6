"""NumPy indexing on random index expressions (Hypothesis): ints, slices with any step,
None, Ellipsis, integer arrays (concrete and traced) and concrete boolean masks, mixed in
any order. ``x[idx]`` and ``x.at[idx].add(v)`` equal NumPy's ``x[idx]`` and
``np.add.at``; an index NumPy refuses raises."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import numbax

X = np.arange(60.0).reshape(4, 5, 3)
KINDS = ["int", "slice", "none", "ellipsis", "array", "column", "mask"]


@st.composite
def index_expressions(draw, shape=X.shape):
    """An index tuple for an array of ``shape``, NumPy-valid or not (masks may be drawn
    for the wrong axis once an Ellipsis moves them)."""
    items, axis = [], 0
    for kind in draw(st.lists(st.sampled_from(KINDS), min_size=1, max_size=4)):
        if kind == "none":
            items.append(None)
            continue
        if kind == "ellipsis":
            items.append(Ellipsis)
            continue
        if axis >= len(shape):
            continue
        n = shape[axis]
        index = st.integers(-n, n - 1)
        if kind == "int":
            items.append(draw(index))
        elif kind == "slice":
            bound = st.none() | st.integers(-n - 1, n + 1)
            step = st.none() | st.sampled_from([1, 2, 3, -1, -2])
            items.append(slice(draw(bound), draw(bound), draw(step)))
        elif kind == "array":
            items.append(np.array(draw(st.lists(index, min_size=0, max_size=3)), np.int64))
        elif kind == "column":
            items.append(np.array(draw(st.lists(index, min_size=1, max_size=2)))[:, None])
        else:
            items.append(np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n))))
        axis += 1
    return tuple(items)


def _numpy_or_error(fn):
    try:
        return fn()
    except (IndexError, ValueError) as err:
        return err


def _bounds_checked(idx):
    """``idx`` with its integer arrays made non-empty, so NumPy checks their bounds."""
    return tuple(
        np.append(i.ravel(), 0) if isinstance(i, np.ndarray) and i.dtype != bool else i for i in idx
    )


@settings(max_examples=400, deadline=None)
@given(idx=index_expressions())
def test_getitem_and_at_add_match_numpy(idx):
    expected = _numpy_or_error(lambda: X[idx])
    if isinstance(expected, Exception):
        with pytest.raises((IndexError, ValueError)):  # numbax's errors subclass these
            numbax.jit(lambda x: x[idx], backend="interpret")(X)
        return
    if expected.size == 0 and isinstance(
        _numpy_or_error(lambda: X[_bounds_checked(idx)]), IndexError
    ):
        return  # NumPy checks no bounds when the result is empty; numbax always does
    actual = numbax.jit(lambda x: x[idx], backend="interpret")(X)
    assert actual.shape == expected.shape
    np.testing.assert_array_equal(actual, expected)

    values = np.random.default_rng(0).standard_normal(expected.shape)
    added = X.copy()
    np.add.at(added, idx, values)
    actual = numbax.jit(lambda x, v: x.at[idx].add(v), backend="interpret")(X, values)
    np.testing.assert_array_equal(actual, added)


@settings(max_examples=150, deadline=None)
@given(idx=index_expressions())
def test_traced_integer_arrays_match_numpy(idx):
    """The same expressions with every integer array passed to jit as an argument."""
    if any(isinstance(i, np.ndarray) and i.dtype == bool for i in idx):
        idx = tuple(np.flatnonzero(i) if isinstance(i, np.ndarray) and i.dtype == bool else i
                    for i in idx)  # fmt: skip
    expected = _numpy_or_error(lambda: X[idx])
    arrays = [k for k, i in enumerate(idx) if isinstance(i, np.ndarray)]
    if isinstance(expected, Exception) or not arrays:
        return

    def fn(x, *traced):
        full = list(idx)
        for k, value in zip(arrays, traced, strict=True):
            full[k] = value
        return x[tuple(full)], x.at[tuple(full)].add(1.0)

    got, added = numbax.jit(fn, backend="interpret")(X, *[idx[k] for k in arrays])
    np.testing.assert_array_equal(got, expected)
    reference = X.copy()
    np.add.at(reference, idx, 1.0)
    np.testing.assert_array_equal(added, reference)


def test_mask_of_the_wrong_shape_raises_index_error():
    with pytest.raises(IndexError, match="boolean index did not match"):
        numbax.jit(lambda x: x[..., np.array([True, False])], backend="interpret")(X)


def test_zero_width_ellipsis_separates_advanced_indices():
    # NumPy: the Ellipsis (even of width 0) makes the indices non-adjacent, so the index
    # dimension goes first: (3, 2), where adjacent indices would give (2, 3).
    idx = (slice(None, None, 2), -4, Ellipsis, np.array([True, True, True]))
    out = numbax.jit(lambda x: x[idx], backend="interpret")(X)
    assert out.shape == X[idx].shape == (3, 2)
    np.testing.assert_array_equal(out, X[idx])


# --------------------------------------------------------------------------------------
# Out-of-range integer indices (README "Out-of-range indices"): a negative index wraps
# once; what is still outside the axis clamps in a gather and drops in a scatter.

WILD = np.array([2, 10**6, -1, -4, 0, 3, -(10**6)])


def _wrapped(i, size):
    return np.where(i < 0, i + size, i)


def _gathered(x, i, axis=0):
    """The oracle of a gather: NumPy's take of the wrapped index, clipped."""
    return np.take(x, _wrapped(i, x.shape[axis]), axis=axis, mode="clip")


def _scattered(x, i, v, ufunc):
    """The oracle of a scatter along axis 0: out-of-range updates left out."""
    wrapped = _wrapped(i, x.shape[0])
    kept = (wrapped >= 0) & (wrapped < x.shape[0])
    out = x.copy()
    if ufunc is None:
        out[wrapped[kept]] = v[kept]
    else:
        ufunc.at(out, wrapped[kept], v[kept])
    return out


def _central_difference(fn, x, step=1e-6):
    grad = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[k] += step
        down[k] -= step
        grad[k] = (fn(up) - fn(down)) / (2 * step)
    return grad


def test_out_of_range_set_is_dropped_traced_and_concrete(backend):
    x = np.zeros(3)
    traced = numbax.jit(lambda x, i: x.at[i].set(7.0), backend=backend)
    concrete = numbax.jit(lambda x: x.at[np.array([2, 10**6])].set(7.0), backend=backend)
    expected = np.array([0.0, 0.0, 7.0])
    np.testing.assert_array_equal(backend.to_host(traced(x, np.array([2, 10**6]))), expected)
    np.testing.assert_array_equal(backend.to_host(concrete(x)), expected)


@pytest.mark.parametrize(
    "mode, ufunc",
    [("set", None), ("add", np.add), ("multiply", np.multiply), ("min", np.minimum),
     ("max", np.maximum)],
)  # fmt: skip
def test_every_scatter_mode_drops_out_of_range_updates(backend, mode, ufunc):
    x = np.array([1.0, -2.0, 3.0])
    values = np.arange(len(WILD), dtype=np.float64) - 3.0
    expected = _scattered(x, WILD, values, ufunc)
    fn = numbax.jit(lambda x, i, v: getattr(x.at[i], mode)(v), backend=backend)
    np.testing.assert_array_equal(backend.to_host(fn(x, WILD, values)), expected)
    concrete = numbax.jit(lambda x, v: getattr(x.at[WILD], mode)(v), backend=backend)
    np.testing.assert_array_equal(backend.to_host(concrete(x, values)), expected)


def test_out_of_range_integer_scalar_update_is_dropped(backend):
    x = np.arange(6.0).reshape(2, 3)
    fn = numbax.jit(lambda x: (x.at[5].set(-1.0), x.at[:, -4].add(1.0)), backend=backend)
    dropped_row, dropped_column = backend.to_host(fn(x))
    np.testing.assert_array_equal(dropped_row, x)
    np.testing.assert_array_equal(dropped_column, x)


def test_out_of_range_gathers_clamp(backend):
    x = np.array([10.0, 20.0, 30.0])
    fn = numbax.jit(
        lambda x, i: (x[i], np.take(x, i), np.take_along_axis(x, i, axis=0)), backend=backend
    )
    for got in backend.to_host(fn(x, WILD)):
        np.testing.assert_array_equal(got, _gathered(x, WILD))


def test_several_index_arrays_clamp_and_drop_per_axis(backend):
    """x[i, j] clamps each index in its own axis (not the flattened position, which
    would read the next row), and .at[i, j] drops a pair with either index outside."""
    x = np.arange(12.0).reshape(3, 4)
    i, j = np.array([0, 1, 2, 5]), np.array([10, -9, 1, 0])
    fn = numbax.jit(lambda x, i, j: (x[i, j], x.at[i, j].add(100.0)), backend=backend)
    read, added = backend.to_host(fn(x, i, j))
    np.testing.assert_array_equal(read, x[np.clip(i, 0, 2), np.clip(_wrapped(j, 4), 0, 3)])
    expected = x.copy()
    expected[2, 1] += 100.0
    np.testing.assert_array_equal(added, expected)


def test_dynamic_slices_clamp_their_starts(backend):
    x = np.arange(5.0)
    fn = numbax.jit(
        lambda x, s: (
            numbax.lax.dynamic_slice(x, [s], [2]),
            numbax.lax.dynamic_update_slice(x, np.array([-1.0, -2.0]), [s]),
        ),
        backend=backend,
    )
    for start, clamped in [(4, 3), (10**6, 3), (-1, 0), (1, 1)]:
        window, updated = backend.to_host(fn(x, np.int64(start)))
        np.testing.assert_array_equal(window, x[clamped : clamped + 2])
        expected = x.copy()
        expected[clamped : clamped + 2] = [-1.0, -2.0]
        np.testing.assert_array_equal(updated, expected)


@pytest.mark.parametrize(
    "mode, ufunc", [("gather", None), ("set", None), ("add", np.add), ("max", np.maximum)]
)
def test_gradients_of_out_of_range_gathers_and_scatters(backend, mode, ufunc):
    """A clamped read sends its cotangent to the entry it read; a dropped update gets a
    zero cotangent and leaves x's cotangent alone."""
    x = np.array([0.5, -1.5, 2.0])
    # The update dropped at 10**6 ties with the max it would clamp onto (x[2]).
    values = np.array([-1.0, 2.0, 0.0, 0.5, 1.0, 1.5, 0.25])
    weights = np.arange(1.0, 4.0)

    def reference(x, v):
        if mode == "gather":
            return np.sum(_gathered(x, WILD) ** 2 * v)
        return np.sum(_scattered(x, WILD, v, ufunc) ** 2 * weights)

    def loss(x, v, i):
        if mode == "gather":
            return np.sum(x[i] ** 2 * v)
        return np.sum(getattr(x.at[i], mode)(v) ** 2 * weights)

    grad = numbax.jit(numbax.grad(loss, argnums=(0, 1)), backend=backend)
    grad_x, grad_v = backend.to_host(grad(x, values, WILD))
    expected_x = _central_difference(lambda x: reference(x, values), x)
    np.testing.assert_allclose(grad_x, expected_x, atol=1e-6)
    expected_v = _central_difference(lambda v: reference(x, v), values)
    np.testing.assert_allclose(grad_v, expected_v, atol=1e-6)


def test_vmapped_scatter_drops_instead_of_reaching_the_next_example(backend):
    x, i = np.zeros((2, 3)), np.array([[0, 3], [-1, 5]])
    fn = numbax.jit(numbax.vmap(lambda x, i: x.at[i].add(1.0)), backend=backend)
    np.testing.assert_array_equal(backend.to_host(fn(x, i)), [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
