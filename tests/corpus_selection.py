"""Corpus cases for NumPy coverage: results whose size depends on the data, and set
operations (registered into ``corpus.CASES``).

The programs call the ``numbax.numpy`` spellings with a static ``size=`` (what ``jit``
needs for a data-dependent count; ``vmap`` maps them too), and NumPy's own spelling
where the count is known while tracing (a constant mask). The oracles are NumPy's
results, padded or cut to ``size`` by the rule of each function.
"""

from __future__ import annotations

import numpy as np
from corpus import boolean, case, f32, f64, i32, i64

from numbax import numpy as xnp


def _sized(values, size, fill):
    """NumPy's ``values`` cut or padded (with ``fill``) to ``size`` along the first axis."""
    values = np.asarray(values)
    out = np.full((size, *values.shape[1:]), fill, values.dtype)
    kept = min(size, len(values))
    out[:kept] = values[:kept]
    return out


def _first_padded(values, size):
    """The set operations' padding: their first value, or 0 when there is none."""
    return _sized(values, size, values[0] if len(values) else 0)


def _nonzero_reference(x):
    return (
        tuple(_sized(i, 6, -1) for i in np.nonzero(x)),
        _sized(np.argwhere(x > 0), 4, 0),
        _sized(np.flatnonzero(x), 5, 0),
    )


@case(
    "nonzero_padded",
    [(f64(3, 4),), (i32(3, 4),), (boolean(2, 5),), (f32(7),), (f64(0, 3),)],
    reference=_nonzero_reference,
)
def nonzero_padded(x):
    return (
        xnp.nonzero(x, size=6, fill_value=-1),
        xnp.argwhere(x > 0, size=4),
        xnp.flatnonzero(x, size=5),
    )


def _constant_mask(x):
    return np.arange(x.size).reshape(x.shape) % 3 == 1


def _selected_reference(x):
    return (
        _sized(np.extract(x > 0, x), 7, 0),
        np.compress(np.arange(x.shape[0]) % 2 == 0, x, axis=0),
        _sized(np.compress(x[0] > 0, x, axis=1).T, 3, 0.5).T,
        np.extract(_constant_mask(x), x * 2),
    )


@case(
    "selected_values",
    [(f64(3, 4),), (f32(3, 4),), (f64(1, 4),), (i32(3, 4),)],
    reference=_selected_reference,
    tags=["index", "grad"],
)
def selected_values(x):
    rows = (x.shape[0] + 1) // 2
    return (
        xnp.extract(x > 0, x, size=7),
        xnp.compress(np.arange(x.shape[0]) % 2 == 0, x, axis=0, size=rows),
        xnp.compress(x[0] > 0, x, axis=1, size=3, fill_value=0.5),
        np.extract(_constant_mask(x), x * 2),  # a constant mask: the count is known
    )


def _set_reference(a, b):
    common, in_a, in_b = np.intersect1d(a, b, return_indices=True)
    values, counts = np.unique_counts(a)
    return (
        np.isin(a, b),
        np.isin(b, a, invert=True),
        (_first_padded(common, 4), _first_padded(in_a, 4), _first_padded(in_b, 4)),
        _first_padded(np.union1d(a, b), 12),
        _sized(np.setdiff1d(a, b), 6, -9),
        _first_padded(np.setxor1d(a, b), 8),
        type(np.unique_counts(a))(_first_padded(values, 6), _sized(counts, 6, 0)),
    )


@case(
    "set_operations",
    [(i32(8), i32(6)), (i64(4, 3), i32(5)), (f64(6), f64(2, 2)), (i32(0), i32(3))],
    reference=_set_reference,
)
def set_operations(a, b):
    return (
        np.isin(a, b),
        np.isin(b, a, invert=True),
        xnp.intersect1d(a, b, return_indices=True, size=4),
        xnp.union1d(a, b, size=12),
        xnp.setdiff1d(a, b, size=6, fill_value=-9),
        xnp.setxor1d(a, b, size=8),
        xnp.unique_counts(a, size=6),
    )
