"""Set operations: isin, intersect1d, union1d, setdiff1d, setxor1d, and NumPy 2's
unique_all, unique_counts, unique_inverse, unique_values; built on ``sorting.unique`` and
``numpy_selection``'s padded selections, with the same static ``size=``/``fill_value=``.

Decisions where NumPy leaves room: the padding is the result's first value, or 0 when it
is empty (``unique``'s rule). ``unique_values`` is sorted (NumPy 2.4's order is its hash
table's, which it does not promise). NumPy 2's ``unique_*`` take each NaN for a value of
its own, the older set operations collapse them, as NumPy does. ``isin`` compares each
element with at most 16 test elements, else searches it among them sorted, whatever
``kind=`` asks; ``kind='table'`` is still refused for non-integers, as NumPy refuses it.

Each name in ``FUNCTIONS`` joins ``numbax.numpy`` and NumPy's dispatch tables
(``numpy_lib/numpy_api.py``).
"""

from __future__ import annotations

from functools import partial

import numpy as np

from ..ir import dtypes
from ..tracer import indexing, lax
from ..tracer.promote import asarray, convert, result_type
from ..tracer.source_info import error_at_user_line as _error
from . import numpy_statistics, shapes, sorting, ufuncs
from .numpy_selection import (
    INDEX_DTYPE,
    compact,
    first_true,
    given_size,
    take_padded,
)
from .sorting import padding_value, sorted_with_firsts, static_size, unique

UniqueAllResult = type(np.unique_all(np.zeros(1)))
UniqueCountsResult = type(np.unique_counts(np.zeros(1)))
UniqueInverseResult = type(np.unique_inverse(np.zeros(1)))


_KINDS = (None, "sort", "table")


def _matches(element, test_elements):
    """Whether each entry of ``element`` equals each of ``test_elements`` (on a new last axis)."""
    spread = lax.expand_dims(element, (element.ndim,))
    return ufuncs.equal(spread, shapes.ravel(test_elements))


# Up to this many test elements, comparing with each of them (one fused loop) is cheaper
# than sorting them and searching each entry's place among them.
_COMPARED_TESTS = 16


def _members(element, test_elements):
    """Whether each entry of ``element`` equals one of ``test_elements``: compared with each,
    or, for more of them, found by binary search in their sorted copy (NaN sorts last and
    equals nothing, so it is in nothing)."""
    tests = shapes.ravel(test_elements)
    if tests.size <= _COMPARED_TESTS:
        return numpy_statistics.any(_matches(element, tests), axis=-1)
    dtype = result_type(element, tests)
    x, ordered = convert(asarray(element), dtype), sorting.sort(convert(tests, dtype))
    place = ufuncs.minimum(sorting.searchsorted(ordered, x), tests.size - 1)
    return ufuncs.equal(indexing.take(ordered, place), x)


def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    """Whether each entry of ``element`` is one of ``test_elements``, as ``numpy.isin``
    (NaN is in nothing). ``assume_unique`` and ``kind`` change how NumPy works, not its
    answer; numbax checks ``kind`` as NumPy does."""
    if kind not in _KINDS:
        raise _error(
            ValueError,
            f"numpy.isin: invalid kind: {kind!r}. Please use None, 'sort' or 'table'",
        )
    x, tests = asarray(element), asarray(test_elements)
    if kind == "table" and not all(t.dtype.kind in "biu" for t in (x, tests)):
        raise _error(
            ValueError,
            "numpy.isin: the 'table' method is only supported for boolean or integer "
            "arrays. Please select 'sort' or None for kind",
        )
    found = _members(x, tests)
    return ufuncs.logical_not(found) if invert else found


def _promoted(ar1, ar2):
    a, b = shapes.ravel(ar1), shapes.ravel(ar2)
    dtype = result_type(a, b)
    return convert(a, dtype), convert(b, dtype)


def _distinct(x):
    """The sorted 1-D ``x``, its permutation and the mask of the first of each run of equal
    values (one NaN for all, as ``numpy.unique``)."""
    if x.size == 0:
        return x, lax.iota(INDEX_DTYPE, (0,), 0), np.zeros(0, bool)
    return sorted_with_firsts(x, True)


def _set_size(arrays, size, name: str, what: str, in_numpy):
    """``size=``, or the size of ``in_numpy``'s result for values known while tracing."""
    size = given_size(size, name)
    if size is not None:
        return size
    call = f"{name}(ar1, ar2, size=n, fill_value=v)"
    return static_size(arrays, lambda *values: np.size(in_numpy(*values)), name, what, call)


def _fill(fill_value, dtype, name: str):
    return None if fill_value is None else padding_value(fill_value, dtype, name)


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False, *, size=None, fill_value=None):
    """The sorted values in both arrays, as ``numpy.intersect1d`` (with ``return_indices``
    their first positions in each); with ``size=``, the first ``size``, padded with
    ``fill_value`` (default: the first value, or 0), a padded index with that value's."""
    a, b = _promoted(ar1, ar2)
    in_numpy = partial(np.intersect1d, assume_unique=assume_unique)
    size = _set_size([a, b], size, "intersect1d", "common values", in_numpy)
    fill = _fill(fill_value, a.dtype, "intersect1d")
    if assume_unique:
        # NumPy's algorithm, so that arrays which are not unique after all give its answer.
        values, order = lax.sort(
            [shapes.concatenate([a, b]), lax.iota(INDEX_DTYPE, (a.size + b.size,))]
        )
        positions, real = first_true(values[1:] == values[:-1], size)
        firsts, seconds = order[:-1], order[1:] - np.int64(a.size)
    else:
        values, firsts, distinct = _distinct(a)
        matches = _matches(values, b)
        positions, real = first_true(distinct & numpy_statistics.any(matches, axis=-1), size)
        seconds = _first_match(matches)
    result = take_padded(values, positions, real, fill)
    if not return_indices:
        return result
    return (
        result,
        take_padded(firsts, positions, real, None),
        take_padded(seconds, positions, real, None),
    )


def _first_match(matches):
    """The position of the first true entry of each row (0 where the rows are empty)."""
    if matches.shape[1] == 0:
        return lax.full(matches.shape[:1], 0, INDEX_DTYPE)
    return lax.argmax(lax.convert_element_type(matches, dtypes.int8), 1)


def union1d(ar1, ar2, *, size=None, fill_value=None):
    """The sorted values in either array, as ``numpy.union1d``; ``size=`` and
    ``fill_value=`` as in ``intersect1d``."""
    a, b = _promoted(ar1, ar2)
    size = _set_size([a, b], size, "union1d", "values in either", np.union1d)
    fill = _fill(fill_value, a.dtype, "union1d")
    return unique(shapes.concatenate([a, b]), size=size, fill_value=fill)


def setdiff1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """The values of ``ar1`` not in ``ar2``, as ``numpy.setdiff1d``: sorted and unique, or
    with ``assume_unique`` in ``ar1``'s order; ``size=``/``fill_value=`` as in intersect1d."""
    a, b = shapes.ravel(ar1), shapes.ravel(ar2)
    in_numpy = partial(np.setdiff1d, assume_unique=assume_unique)
    size = _set_size([a, b], size, "setdiff1d", "values only in ar1", in_numpy)
    fill = _fill(fill_value, a.dtype, "setdiff1d")
    if assume_unique:
        return compact(a, ~_members(a, b), size, fill)
    values, _, distinct = _distinct(a)
    return compact(values, distinct & ~_members(values, b), size, fill)


def _only_in_one(a, b):
    """Sorted candidates and the mask of the values in exactly one of ``a`` and ``b``."""
    (values_a, _, distinct_a), (values_b, _, distinct_b) = _distinct(a), _distinct(b)
    keep_a = distinct_a & ~_members(values_a, b)
    keep_b = distinct_b & ~_members(values_b, a)
    both = [shapes.concatenate([values_a, values_b]), shapes.concatenate([keep_a, keep_b])]
    return lax.sort(both, 0, True, 1) if a.size + b.size else both


def _appearing_once(a, b):
    """NumPy's ``assume_unique`` algorithm: sorted, the values not equal to a neighbour."""
    values = shapes.concatenate([a, b])
    if values.size == 0:
        return values, np.zeros(0, bool)
    values = lax.sort(values, 0)
    edge = np.ones(1, bool)
    differs = shapes.concatenate([edge, values[1:] != values[:-1], edge])
    return values, differs[1:] & differs[:-1]


def setxor1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """The sorted values in exactly one of the arrays, as ``numpy.setxor1d`` (a NaN of each
    counts as its own, as in NumPy); ``size=``/``fill_value=`` as in intersect1d."""
    a, b = _promoted(ar1, ar2)
    in_numpy = partial(np.setxor1d, assume_unique=assume_unique)
    size = _set_size([a, b], size, "setxor1d", "values in only one", in_numpy)
    fill = _fill(fill_value, a.dtype, "setxor1d")
    values, keep = _appearing_once(a, b) if assume_unique else _only_in_one(a, b)
    return compact(values, keep, size, fill)


# --------------------------------------------------------------------------------------
# NumPy 2's unique_* (each NaN its own value, as there)


def _unique(x, size, fill_value, name: str, wanted):
    x = asarray(x)
    size = given_size(size, name)
    if size is None:
        call = f"{name}(x, size=n, fill_value=v)"
        size = static_size(
            [x], lambda value: len(np.unique(value, equal_nan=False)), name, "unique values", call
        )
    fill = _fill(fill_value, x.dtype, name)
    return unique(x, *wanted, equal_nan=False, size=size, fill_value=fill)


def unique_all(x, *, size=None, fill_value=None):
    """``(values, indices, inverse_indices, counts)``, as ``numpy.unique_all``; ``size=``
    and ``fill_value=`` as in ``numbax.numpy.unique``."""
    return UniqueAllResult(*_unique(x, size, fill_value, "unique_all", (True, True, True)))


def unique_counts(x, *, size=None, fill_value=None):
    """``(values, counts)``, as ``numpy.unique_counts``."""
    return UniqueCountsResult(*_unique(x, size, fill_value, "unique_counts", (False, False, True)))


def unique_inverse(x, *, size=None, fill_value=None):
    """``(values, inverse_indices)``, as ``numpy.unique_inverse``."""
    wanted = (False, True, False)
    return UniqueInverseResult(*_unique(x, size, fill_value, "unique_inverse", wanted))


def unique_values(x, *, size=None, fill_value=None):
    """The unique values, sorted (NumPy 2.4 returns them in an order it does not promise)."""
    return _unique(x, size, fill_value, "unique_values", (False, False, False))


FUNCTIONS: dict = {
    "isin": isin,
    "intersect1d": intersect1d,
    "union1d": union1d,
    "setdiff1d": setdiff1d,
    "setxor1d": setxor1d,
    "unique_all": unique_all,
    "unique_counts": unique_counts,
    "unique_inverse": unique_inverse,
    "unique_values": unique_values,
}
UFUNCS: dict = {}
