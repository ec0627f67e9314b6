"""``sort`` of one operand along its last axis in the compiled program: a radix sort.

Numba's ``np.sort`` is a scalar quicksort, about half the speed of NumPy's vectorised
sort on long rows. A least-significant-digit radix sort on the keys' bits is faster
than either: each key becomes an unsigned integer whose order is the value's (a float's
sign bit flipped, and its other bits too when it is negative; an integer's sign bit
flipped), then one counting pass per byte that is not the same in every key moves the
keys to their place. NaNs leave the keys first and fill the row's end with their own
bits, as NumPy's sort puts them last. Rows shorter than ``RADIX_MIN`` are not worth a
radix sort's counting passes and go to ``np.sort``.

The radix sort orders ``-0.0`` before ``0.0``, which an unstable sort may do (they tie),
so only the sorts whose order a tie cannot show come here (``opaque._sort``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

MODULE = "numbax.backends.cpu.sorting"
IMPORTS = {MODULE: ("nbx_sorting", "from numbax.backends.cpu import sorting as nbx_sorting")}
# The dtypes whose bits the keys are made of, and the unsigned integer of each's width.
RADIX_DTYPES = {
    np.dtype(np.float64): np.uint64,
    np.dtype(np.float32): np.uint32,
    np.dtype(np.int64): np.uint64,
    np.dtype(np.int32): np.uint32,
}
RADIX_MIN = 1 << 8  # measured: the radix sort is faster from about 64 keys a row
DIGIT_BITS = 8
BUCKETS = 1 << DIGIT_BITS


def key_sign_source(dtype: np.dtype) -> str:
    """The top bit of ``dtype``'s key type, as the generated source writes it."""
    key = np.dtype(RADIX_DTYPES[dtype])
    return f"np.{key.name}({1 << (8 * key.itemsize - 1)})"


_JIT = {"error_model": "numpy", "no_cfunc_wrapper": True, "cache": True}


@njit(**_JIT)
def _float_keys(row, keys, out_row, sign):
    """The keys of the row's numbers in ``keys``, its NaNs at the end of ``out_row``;
    returns how many keys there are. ``sign`` is the key type's top bit."""
    bits = row.view(keys.dtype)
    everything = ~(sign ^ sign)  # all ones; `sign - 1` would be a float in Numba
    count, nans = 0, 0
    for i in range(row.size):
        value = row[i]
        if value != value:
            nans += 1
            out_row[row.size - nans] = value
            continue
        b = bits[i]
        keys[count] = b ^ everything if b & sign else b ^ sign
        count += 1
    return count


@njit(**_JIT)
def _float_values(keys, count, out_row, sign):
    bits = out_row.view(keys.dtype)
    everything = ~(sign ^ sign)  # all ones; `sign - 1` would be a float in Numba
    for i in range(count):
        k = keys[i]
        bits[i] = k ^ sign if k & sign else k ^ everything


@njit(**_JIT)
def _integer_keys(row, keys, out_row, sign):
    bits = row.view(keys.dtype)
    for i in range(row.size):
        keys[i] = bits[i] ^ sign
    return row.size


@njit(**_JIT)
def _integer_values(keys, count, out_row, sign):
    bits = out_row.view(keys.dtype)
    for i in range(count):
        bits[i] = keys[i] ^ sign


@njit(**_JIT)
def _radix_sort(keys, buffer, count, counts):
    """Sorts ``keys[:count]``; returns whichever of ``keys``/``buffer`` holds the result."""
    digits = keys.itemsize
    # Shifts and masks as uint64: a uint64 mixed with a signed integer is a float in Numba.
    mask = np.uint64(BUCKETS - 1)
    counts[:] = 0
    for i in range(count):  # every digit's histogram in one read of the keys
        k = keys[i]
        for d in range(digits):
            counts[d, (k >> np.uint64(DIGIT_BITS * d)) & mask] += 1
    source, target = keys, buffer
    for d in range(digits):
        shift = np.uint64(DIGIT_BITS * d)
        if counts[d, (source[0] >> shift) & mask] == count:
            continue  # the same digit in every key: this pass would move nothing
        start = 0
        for bucket in range(BUCKETS):  # the counts become each bucket's first place
            size = counts[d, bucket]
            counts[d, bucket] = start
            start += size
        for i in range(count):
            k = source[i]
            bucket = (k >> shift) & mask
            target[counts[d, bucket]] = k
            counts[d, bucket] += 1
        source, target = target, source
    return source


@njit(**_JIT)
def sort_rows(x, out, sign, floats):
    """Each row of ``x`` (rows, n) sorted into ``out``, NaNs last. ``sign`` is the top bit
    of the unsigned key type as wide as ``x``'s; ``floats`` whether ``x`` holds floats."""
    n = x.shape[1]
    if n < RADIX_MIN:
        for r in range(x.shape[0]):
            out[r] = np.sort(x[r])
        return
    keys, buffer = np.full(n, sign), np.full(n, sign)
    counts = np.empty((keys.itemsize, BUCKETS), np.int64)
    for r in range(x.shape[0]):
        if floats:
            count = _float_keys(x[r], keys, out[r], sign)
        else:
            count = _integer_keys(x[r], keys, out[r], sign)
        if count == 0:
            continue
        sorted_keys = _radix_sort(keys, buffer, count, counts)
        if floats:
            _float_values(sorted_keys, count, out[r], sign)
        else:
            _integer_values(sorted_keys, count, out[r], sign)
