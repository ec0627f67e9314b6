"""``sort``: operands of one shape sorted together along ``dimension``, as ``jax.lax.sort``.

The first ``num_keys`` operands are the keys, compared lexicographically (the first is
the primary key); every operand comes out permuted the same way, so ``sort(x, iota)``
is an argsort and ``sort(keys..., payload)`` a sort by key. The order is NumPy's: NaNs
last, ``-0.0 == 0.0`` (equal keys keep their order when ``is_stable``, and in the
reference always). Sorting has no efficient composition of the other primitives, so it
is one of them; argsort, lexsort, top_k, quantiles and unique are built on it.
"""

from __future__ import annotations

import numpy as np

from . import dtypes
from .core import ShapedArray
from .primitive import Pattern, check, register


def _sort_rule(*operands: ShapedArray, dimension, is_stable, num_keys):
    check(len(operands) >= 1, "sort", "needs at least one operand")
    shape = operands[0].shape
    check(all(x.shape == shape for x in operands), "sort", "operands differ in shape")
    check(0 <= dimension < len(shape), "sort", f"dimension {dimension} out of range")
    check(1 <= num_keys <= len(operands), "sort", f"num_keys {num_keys} out of range")
    check(isinstance(is_stable, bool), "sort", "is_stable must be a bool")
    return list(operands)


def sort_permutation(keys, dimension: int) -> np.ndarray:
    """The stable order of ``keys`` (first primary) along ``dimension``, NaNs last
    (bfloat16 keys compare as float32: ml_dtypes' own order does not put NaNs last)."""
    keys = [k.astype(dtypes.float32) if k.dtype == dtypes.bfloat16 else k for k in keys]
    if len(keys) == 1:
        return np.argsort(keys[0], axis=dimension, kind="stable")
    # np.lexsort sorts by its last key first.
    return np.lexsort(tuple(reversed(keys)), axis=dimension)


def _sort(*operands, dimension, is_stable, num_keys):
    order = sort_permutation(operands[:num_keys], dimension)
    return [np.take_along_axis(x, order, axis=dimension) for x in operands]


sort_p = register("sort", Pattern.OPAQUE, _sort_rule, _sort, multiple_results=True, expensive=True)
