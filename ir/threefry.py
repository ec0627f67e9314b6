"""``threefry2x32``: the Threefry-2x32 block cipher (20 rounds, Salmon et al. 2011) as
one elementwise primitive, the generator under ``numbax.random`` (JAX has
``threefry2x32_p`` too).

Written in the other primitives the cipher is some 180 equations per use, unrolled
into every program that draws, and compiling them dominated the first call of every
draw. As one primitive it is one equation whose backends call a helper compiled once
per process (``backends/threefry.py``).

``threefry2x32[output] key0 key1 count0 count1``: four int64 operands (one shape, or
rank 0, as every elementwise primitive) each holding a 32-bit word, its low 32 bits;
one int64 result, chosen by ``output``, so that every use in ``numbax.random`` is one
equation:

- ``"word0"``, ``"word1"``: one of the two words of the cipher text, in ``[0, 2**32)``;
- ``"xor"``: ``word0 ^ word1`` (JAX's 32-bit ``bits``);
- ``"bits64"``: ``(word0 << 32) | word1``, the 64-bit word wrapped into int64.

Integer-valued: no derivative.

``encrypt`` and ``COMBINE`` are the algorithm, in nothing but ``+ ^ & | << >>`` on
integers, so one text serves every target: the NumPy reference runs it on uint32
arrays, the cpu backend compiles it with Numba on int64 scalars, the cuda backend
into its kernels (or as Python under the simulator). On int64 every sum is masked to
32 bits (a no-op on uint32); ``COMBINE`` runs on int64, where ``<< 32`` wraps.
"""

from __future__ import annotations

import numpy as np

from . import dtypes
from .core import ShapedArray
from .elementwise import common_shape
from .primitive import Pattern, check, register

MASK = 0xFFFFFFFF
PARITY = 0x1BD11BDA  # the key schedule's constant: key2 = key0 ^ key1 ^ PARITY
ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))  # the left rotations of even, odd groups


def encrypt(key0, key1, count0, count1):
    """The cipher text ``(word0, word1)`` of the counter words under the key words: five
    groups of four rounds (add, rotate, xor), a key injection after each."""
    key0, key1 = key0 & MASK, key1 & MASK
    keys = (key0, key1, key0 ^ key1 ^ PARITY)
    x0 = (count0 + key0) & MASK
    x1 = (count1 + key1) & MASK
    for group in range(5):
        for r in ROTATIONS[group % 2]:
            x0 = (x0 + x1) & MASK
            x1 = x0 ^ (((x1 << r) | (x1 >> (32 - r))) & MASK)
        x0 = (x0 + keys[(group + 1) % 3]) & MASK
        x1 = (x1 + keys[(group + 2) % 3] + (group + 1)) & MASK
    return x0, x1


def _word0(x0, x1):
    return x0


def _word1(x0, x1):
    return x1


def _xor(x0, x1):
    return x0 ^ x1


def _bits64(x0, x1):
    return (x0 << 32) | x1


# output -> its function of the cipher text (x0, x1), int64-held words.
COMBINE = {"word0": _word0, "word1": _word1, "xor": _xor, "bits64": _bits64}
OUTPUTS = tuple(COMBINE)


def _threefry2x32_rule(*operands: ShapedArray, output: str) -> ShapedArray:
    check(len(operands) == 4, "threefry2x32", f"takes 4 operands, got {len(operands)}")
    for operand in operands:
        check(
            operand.dtype == dtypes.int64,
            "threefry2x32",
            f"operands hold 32-bit words in int64, got {operand.dtype}",
        )
    check(output in OUTPUTS, "threefry2x32", f"output must be one of {OUTPUTS}, got {output!r}")
    return ShapedArray(common_shape("threefry2x32", operands), dtypes.int64)


def _threefry2x32(*operands, output):
    # uint32 wraps its sums by itself; astype keeps each operand's low 32 bits.
    words = np.broadcast_arrays(*(np.asarray(x).astype(np.uint32) for x in operands))
    with np.errstate(all="ignore"):  # rank-0 operands compute on NumPy scalars, which warn
        x0, x1 = (np.asarray(word, dtype=np.int64) for word in encrypt(*words))
        return np.asarray(COMBINE[output](x0, x1), dtype=np.int64)


threefry2x32_p = register(
    "threefry2x32",
    Pattern.ELEMENTWISE,
    _threefry2x32_rule,
    _threefry2x32,
    expensive=True,
    differentiable=False,
)
