"""Sorting: the ``sort`` primitive's order (NaNs last, stable ties), what is built on it
(top_k, unique with size=, quantiles), its derivative, and the errors a user meets.
The corpus (``tests/corpus_sorting.py``) runs the NumPy functions on every backend."""

from __future__ import annotations

import numpy as np
import pytest
from tracer_util import central_differences

import numbax
from numbax import lax
from numbax import numpy as xnp
from numbax.ir.errors import ConcretizationError, UnsupportedFunctionError


def run(backend, fun, *args):
    return backend.to_host(numbax.jit(fun, backend=backend.name)(*args))


def test_nans_sort_last_and_zeros_tie(backend):
    x = np.array([2.0, np.nan, -0.0, 1.0, 0.0, -np.inf, np.nan, -0.0, np.inf])
    values, order = run(backend, lambda x: (np.sort(x), np.argsort(x)), x)
    np.testing.assert_array_equal(values, np.sort(x))
    # -0.0 and 0.0 are equal keys: a stable argsort keeps them in their order.
    np.testing.assert_array_equal(order, np.argsort(x, kind="stable"))
    np.testing.assert_array_equal(order[1:4], [2, 4, 7])


def test_a_sort_by_key_is_stable_and_moves_the_payload(backend):
    keys = np.array([[2, 1, 2, 1, 0, 2], [0, 0, 0, 0, 0, 0]], np.int32)
    payload = np.arange(12.0).reshape(2, 6)

    def by_key(keys, payload):
        return lax.sort([keys, payload], dimension=1, num_keys=1)

    sorted_keys, moved = run(backend, by_key, keys, payload)
    order = np.argsort(keys, axis=1, kind="stable")
    np.testing.assert_array_equal(sorted_keys, np.take_along_axis(keys, order, 1))
    np.testing.assert_array_equal(moved, np.take_along_axis(payload, order, 1))


def test_lexicographic_keys_on_the_leading_axis(backend):
    rng = np.random.default_rng(1)
    first, second = rng.integers(0, 3, (2, 7, 3))
    payload = rng.standard_normal((7, 3))

    def by_two_keys(a, b, c):
        return lax.sort([a, b, c], dimension=0, num_keys=2)

    outs = run(backend, by_two_keys, first, second, payload)
    order = np.lexsort((second, first), axis=0)
    for got, x in zip(outs, (first, second, payload), strict=True):
        np.testing.assert_array_equal(got, np.take_along_axis(x, order, 0))


def test_results_nothing_reads_still_bind_in_order(backend):
    """An argsort reads only the second output of its sort: the compiled program must
    still give each result its own name (an unread first output once took its place)."""
    x = np.array([[3.0, 1.0, 2.0], [0.5, 0.7, 0.1]])
    got = run(backend, lambda x: np.argsort(x, axis=1) * 10, x)
    np.testing.assert_array_equal(got, np.argsort(x, axis=1, kind="stable") * 10)


def test_sorting_a_flattened_view(backend):
    """``axis=None`` sorts a reshape of the operand: the cuda backend hands the sort the
    reshape's (unreshaped) buffer, which it must read in the sort's own shape."""
    x = np.array([[3.0, -1.0, 2.0], [0.5, 7.0, -4.0]])
    got = run(backend, lambda x: (np.sort(x, axis=None), np.argsort(x, axis=None)), x)
    np.testing.assert_array_equal(got[0], np.sort(x, axis=None))
    np.testing.assert_array_equal(got[1], np.argsort(x, axis=None, kind="stable"))


def test_top_k_orders_ties_by_index_and_nan_first(backend):
    x = np.array([[1.0, 5.0, 5.0, np.nan, 2.0], [0.0, 0.0, 0.0, 1.0, 0.0]])
    values, indices = run(backend, lambda x: numbax.lax.top_k(x, 3), x)
    np.testing.assert_array_equal(values, [[np.nan, 5.0, 5.0], [1.0, 0.0, 0.0]])
    np.testing.assert_array_equal(indices, [[3, 1, 2], [3, 0, 1]])
    assert indices.dtype == np.int32


def test_unique_with_size_pads_and_truncates(backend):
    x = np.array([3, 1, 3, 1, 2, 0, 0, 1, 1, 0], np.int64)

    def uniques(x):
        padded = xnp.unique(x, return_index=True, return_counts=True, size=6, fill_value=-1)
        return padded, xnp.unique(x, size=2, return_counts=True)

    (values, index, counts), (first_two, first_counts) = run(backend, uniques, x)
    np.testing.assert_array_equal(values, [0, 1, 2, 3, -1, -1])
    np.testing.assert_array_equal(index[:4], np.unique(x, return_index=True)[1])
    np.testing.assert_array_equal(counts, [3, 4, 1, 2, 0, 0])
    np.testing.assert_array_equal(first_two, [0, 1])
    np.testing.assert_array_equal(first_counts, [3, 4])


def test_unique_collapses_nans_as_numpy_does():
    x = np.array([1.0, np.nan, 0.0, np.nan, 1.0])
    got = numbax.jit(lambda x: xnp.unique(x, size=3))(x)
    np.testing.assert_array_equal(got, np.unique(x))


def test_unique_without_size_needs_a_known_value():
    x = np.array([2, 1, 2])
    with pytest.raises(ConcretizationError, match="size="):
        numbax.jit(lambda x: np.unique(x))(x)
    # Eagerly (a concrete trace) the count is known, as is a constant's under jit.
    assert numbax.grad(lambda v: np.sum(np.unique(x) * v))(1.0) == 3.0
    np.testing.assert_array_equal(numbax.jit(lambda: np.unique(x + 0))(), [1, 2])


@pytest.mark.parametrize(
    "fun",
    [
        lambda x: np.sum(np.sort(x, axis=0) * np.arange(4.0)[:, None]),
        lambda x: np.median(x),
        lambda x: np.sum(np.percentile(x, [10, 65], axis=1) ** 2),
        lambda x: np.sum(numbax.lax.top_k(x, 2)[0] * np.array([1.0, -3.0])),
    ],
    ids=["sort", "median", "percentile", "top_k"],
)
def test_gradients_reach_the_selected_elements(backend, fun):
    x = np.random.default_rng(2).standard_normal((4, 3))
    got = backend.to_host(numbax.jit(numbax.grad(fun), backend=backend.name)(x))
    np.testing.assert_allclose(got, central_differences(fun, x), rtol=1e-6, atol=1e-8)


def test_median_gradient_splits_between_the_middle_pair():
    x = np.array([4.0, 1.0, 3.0, 2.0])
    np.testing.assert_array_equal(numbax.grad(np.median)(x), [0.0, 0.0, 0.5, 0.5])


def test_partition_is_a_valid_partition():
    x = np.random.default_rng(3).standard_normal(9)
    got = numbax.jit(lambda x: np.partition(x, 4))(x)
    assert np.all(got[:4] <= got[4]) and np.all(got[5:] >= got[4])
    assert got[4] == np.partition(x, 4)[4]


def test_searchsorted_counts_nans_as_largest():
    a = np.array([1.0, 2.0, 2.0, 3.0, np.nan])
    v = np.array([2.0, np.nan, 0.0, 5.0])
    for side in ("left", "right"):
        got = numbax.jit(lambda a, v, side=side: np.searchsorted(a, v, side=side))(a, v)
        np.testing.assert_array_equal(got, np.searchsorted(a, v, side=side))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda x: np.sort(x, order="f"), "order="),
        (lambda x: np.sort(x, kind="bogus"), "kind must be one of"),
        (lambda x: np.quantile(x, 0.5, method="weibull"), "method='weibull'"),
        (lambda x: np.quantile(x, 0.5, weights=x), "weights="),
        (lambda x: np.unique(x, axis=0), "axis="),
        (lambda x: np.sort_complex(x), "sort_complex"),
        (lambda x: np.partition(x, 7), "kth"),
        (lambda x: numbax.lax.top_k(x, 5), "k=5"),
    ],
)
def test_refusals_name_the_argument(call, message):
    with pytest.raises((UnsupportedFunctionError, ValueError, TypeError), match=message):
        numbax.jit(call)(np.ones(3))
