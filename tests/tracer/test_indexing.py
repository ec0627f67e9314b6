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
